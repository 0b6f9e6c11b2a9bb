/* C twin of ptl_wsgi/_htmltext_py.py.
 *
 * The Python twin is the reference: every name exported here must give the
 * same results, result types and exceptions.  Comments below explain where
 * the C code takes a shortcut and why the shortcut cannot be observed.
 *
 * Module-level state lives in statics (single-phase init): the hot paths
 * then need no module-state lookup, and the module is imported once per
 * process anyway.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <string.h>
#if defined(__SSE2__) || defined(_M_X64)
#  include <emmintrin.h>
#  define HAVE_SSE2 1
#endif

#if PY_VERSION_HEX < 0x030C0000
#  include "structmember.h"
#  define Py_T_OBJECT_EX T_OBJECT_EX
#endif

/* Silences -Wcast-function-type for METH_FASTCALL and METH_KEYWORDS tables. */
#define CFUNC(func) ((PyCFunction)(void (*)(void))(func))

/* Bound on the cache of parsed % formats, like the Python twin's lru_cache. */
#define FORMAT_CACHE_SIZE 1024

static PyTypeObject HtmlTextBase_Type;
static PyTypeObject TemplateIO_Type;
static PyTypeObject FieldProxy_Type;
static PyTypeObject ParsedFormat_Type;

/* The class results are made of: str until ptl_wsgi.html registers htmltext. */
static PyTypeObject *text_type;

static PyObject *empty_str;
static PyObject *str_html;         /* "__html__" */
static PyObject *str_html_format;  /* "__html_format__" */
static PyObject *str_append;       /* "append" */
static PyObject *str_new;          /* str.__new__ */
static PyObject *str_dunder_new;   /* "__new__" */
static PyObject *str_format;       /* str.format */
static PyObject *str_format_map;   /* str.format_map */
static PyObject *format_cache;     /* dict: format string -> ParsedFormat */
static PyObject *rewrite_cache;    /* dict: str.format string -> rewrite_format() of it */
static PyObject *formatter_parser; /* _string.formatter_parser */
static PyObject *str_lbrace, *str_lbrace2, *str_rbrace, *str_rbrace2;  /* "{" "{{" "}" "}}" */

/* -- small helpers ------------------------------------------------------- */

/* getattr(obj, name, <missing>): 1 found, 0 missing, -1 error (only
   AttributeError is swallowed, like getattr with a default). */
static int
lookup_attr(PyObject *obj, PyObject *name, PyObject **result)
{
#if PY_VERSION_HEX >= 0x030D0000
    return PyObject_GetOptionalAttr(obj, name, result);
#else
    return _PyObject_LookupAttr(obj, name, result);
#endif
}

/* Binds vectorcall arguments to the parameters `names` the way a Python def
   does; the first `required` parameters have no default (missing ones are
   left NULL). */
static int
bind_args(const char *func, const char *const *names, Py_ssize_t nnames, Py_ssize_t required,
          PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **out)
{
    Py_ssize_t i;

    if (kwnames == NULL && nargs == nnames) {
        for (i = 0; i < nargs; i++) {
            out[i] = args[i];
        }
        return 0;
    }
    if (nargs > nnames) {
        if (required == nnames) {
            PyErr_Format(PyExc_TypeError,
                         "%s() takes %zd positional argument%s but %zd %s given", func,
                         nnames, nnames == 1 ? "" : "s", nargs, nargs == 1 ? "was" : "were");
        }
        else {
            PyErr_Format(PyExc_TypeError,
                         "%s() takes from %zd to %zd positional arguments but %zd were given",
                         func, required, nnames, nargs);
        }
        return -1;
    }
    for (i = 0; i < nnames; i++) {
        out[i] = i < nargs ? args[i] : NULL;
    }
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        Py_ssize_t j = 0;
        while (j < nnames && PyUnicode_CompareWithASCIIString(key, names[j]) != 0) {
            j++;
        }
        if (j == nnames) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'",
                         func, key);
            return -1;
        }
        if (out[j] != NULL) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'",
                         func, names[j]);
            return -1;
        }
        out[j] = args[nargs + k];
    }
    for (i = 0; i < required; i++) {
        if (out[i] == NULL) {
            PyErr_Format(PyExc_TypeError,
                         "%s() missing 1 required positional argument: '%s'", func, names[i]);
            return -1;
        }
    }
    return 0;
}

/* A 1-tuple that new_text() reuses for exact str arguments: str's tp_new
   only reads its arguments, and with an exact str nothing it calls can run
   Python code, so the tuple is never seen by anyone else.  It is untracked
   by the GC and holds a borrowed reference only for the duration of the
   call; its item is NULL otherwise. */
static PyObject *new_args;

/* str.__new__(cls, s) without its per-call type checks; `cls` was checked
   once by register() or is the type of an existing instance. */
static PyObject *
new_text(PyTypeObject *cls, PyObject *s)
{
    PyObject *result;
    if (PyUnicode_CheckExact(s) && Py_REFCNT(new_args) == 1 &&
        PyTuple_GET_ITEM(new_args, 0) == NULL) {
        PyTuple_SET_ITEM(new_args, 0, s);
        result = PyUnicode_Type.tp_new(cls, new_args, NULL);
        PyTuple_SET_ITEM(new_args, 0, NULL);
        return result;
    }
    PyObject *args = PyTuple_Pack(1, s);
    if (args == NULL) {
        return NULL;
    }
    result = PyUnicode_Type.tp_new(cls, args, NULL);
    Py_DECREF(args);
    return result;
}

/* new_text() that consumes `s` (and passes a NULL through). */
static PyObject *
new_text_steal(PyTypeObject *cls, PyObject *s)
{
    if (s == NULL) {
        return NULL;
    }
    PyObject *result = new_text(cls, s);
    Py_DECREF(s);
    return result;
}

/* True when str(v) has exactly v's characters, so v can be used in place of
   str(v) wherever only the characters matter (joins, concatenation). */
static inline int
str_is_itself(PyObject *v)
{
    return PyUnicode_Check(v) && Py_TYPE(v)->tp_str == PyUnicode_Type.tp_str;
}

/* An instance of the registered class: trusted markup, so its __html__ is
   not looked up (it returns self). */
static inline int
is_registered_text(PyObject *v)
{
    return Py_TYPE(v) == text_type && text_type->tp_str == PyUnicode_Type.tp_str;
}

/* -- escaping ------------------------------------------------------------ */

/* How many characters each ASCII character grows by once escaped; the five
   escaped characters are all below 64. */
static const unsigned char escape_extra[64] = {
    ['"'] = 5, ['&'] = 4, ['\''] = 5, ['<'] = 3, ['>'] = 3,
};
static const char *const escape_repl[64] = {
    ['"'] = "&quot;", ['&'] = "&amp;", ['\''] = "&#x27;", ['<'] = "&lt;", ['>'] = "&gt;",
};

/* For 1-byte strings: the growth of every byte value, and what each byte is
   written as, padded to 8 bytes so that a single fixed-size copy writes any
   of them (filled in by init_escape_tables()). */
static unsigned char ucs1_extra_table[256];
static unsigned char ucs1_repl[256][8];

static void
init_escape_tables(void)
{
    for (int c = 0; c < 256; c++) {
        if (c < 64 && escape_extra[c]) {
            ucs1_extra_table[c] = escape_extra[c];
            memcpy(ucs1_repl[c], escape_repl[c], strlen(escape_repl[c]));
        }
        else {
            ucs1_repl[c][0] = (unsigned char)c;
        }
    }
}

#ifdef HAVE_SSE2
/* 0xff in every byte of v that is one of & < > " ' */
static inline __m128i
sse2_specials(__m128i v)
{
    return _mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('&')), _mm_cmpeq_epi8(v, _mm_set1_epi8('<'))),
        _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('>')),
                     _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                  _mm_cmpeq_epi8(v, _mm_set1_epi8('\'')))));
}
#endif

/* 16 bytes at a time: each special byte becomes its growth (3, 4 or 5) and
   _mm_sad_epu8 adds them up, so clean text costs a few instructions per 16
   characters. */
static Py_ssize_t
ucs1_extra(const Py_UCS1 *src, Py_ssize_t n)
{
    Py_ssize_t i = 0, extra = 0;
#ifdef HAVE_SSE2
    /* Skip clean text 64 bytes at a time first: most text has nothing to
       escape, and this loop does only comparisons. */
    for (; i + 64 <= n; i += 64) {
        const __m128i *block = (const __m128i *)(src + i);
        __m128i any = _mm_or_si128(
            _mm_or_si128(sse2_specials(_mm_loadu_si128(block)),
                         sse2_specials(_mm_loadu_si128(block + 1))),
            _mm_or_si128(sse2_specials(_mm_loadu_si128(block + 2)),
                         sse2_specials(_mm_loadu_si128(block + 3))));
        if (_mm_movemask_epi8(any) != 0) {
            break;
        }
    }
    const __m128i zero = _mm_setzero_si128();
    __m128i acc = zero;
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(src + i));
        __m128i e = _mm_or_si128(
            _mm_and_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('&')), _mm_set1_epi8(4)),
            _mm_or_si128(
                _mm_and_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('<')),
                                           _mm_cmpeq_epi8(v, _mm_set1_epi8('>'))),
                              _mm_set1_epi8(3)),
                _mm_and_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                           _mm_cmpeq_epi8(v, _mm_set1_epi8('\''))),
                              _mm_set1_epi8(5))));
        acc = _mm_add_epi64(acc, _mm_sad_epu8(e, zero));
    }
    extra = (Py_ssize_t)_mm_cvtsi128_si64(acc) +
            (Py_ssize_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(acc, acc));
#endif
    for (; i < n; i++) {
        extra += ucs1_extra_table[src[i]];
    }
    return extra;
}

/* Writes the escaped src to dst, which ends at `end` (exactly what
   ucs1_extra() counted).  Clean blocks of 16 are copied whole; otherwise a
   character is one 8-byte copy from ucs1_repl while there is room for it. */
static void
ucs1_write(const Py_UCS1 *src, Py_ssize_t n, Py_UCS1 *dst, const Py_UCS1 *end)
{
    Py_ssize_t i = 0;
#ifdef HAVE_SSE2
    while (i + 16 <= n) {
        __m128i v = _mm_loadu_si128((const __m128i *)(src + i));
        if (_mm_movemask_epi8(sse2_specials(v)) == 0) {
            /* The output left is at least as long as the input left. */
            _mm_storeu_si128((__m128i *)dst, v);
            dst += 16;
            i += 16;
            continue;
        }
        for (Py_ssize_t stop = i + 16; i < stop; i++) {
            Py_UCS1 c = src[i];
            if (end - dst >= 8) {
                memcpy(dst, ucs1_repl[c], 8);
            }
            else {
                memcpy(dst, ucs1_repl[c], (size_t)ucs1_extra_table[c] + 1);
            }
            dst += ucs1_extra_table[c] + 1;
        }
    }
#endif
    for (; i < n; i++) {
        Py_UCS1 c = src[i];
        if (end - dst >= 8) {
            memcpy(dst, ucs1_repl[c], 8);
        }
        else {
            memcpy(dst, ucs1_repl[c], (size_t)ucs1_extra_table[c] + 1);
        }
        dst += ucs1_extra_table[c] + 1;
    }
}

#define DEFINE_ESCAPE(NAME, T)                                          \
    static Py_ssize_t                                                   \
    NAME##_extra(const T *src, Py_ssize_t n)                            \
    {                                                                   \
        Py_ssize_t extra = 0;                                           \
        for (Py_ssize_t i = 0; i < n; i++) {                            \
            extra += src[i] < 64 ? escape_extra[src[i]] : 0;            \
        }                                                               \
        return extra;                                                   \
    }                                                                   \
                                                                        \
    static void                                                         \
    NAME##_write(const T *src, Py_ssize_t n, T *dst)                    \
    {                                                                   \
        for (Py_ssize_t i = 0; i < n; i++) {                            \
            T c = src[i];                                               \
            if (c < 64 && escape_extra[c]) {                            \
                for (const char *r = escape_repl[c]; *r; r++) {         \
                    *dst++ = (T)*r;                                     \
                }                                                       \
            }                                                           \
            else {                                                      \
                *dst++ = c;                                             \
            }                                                           \
        }                                                               \
    }

DEFINE_ESCAPE(ucs2, Py_UCS2)
DEFINE_ESCAPE(ucs4, Py_UCS4)

/* escape_str() for any str: a new reference, `s` itself when nothing needs
   escaping.  One pass counts, one writes; the output keeps the input's kind. */
static PyObject *
escape_text(PyObject *s)
{
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(s) < 0) {
        return NULL;
    }
#endif
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    const void *src = PyUnicode_DATA(s);
    Py_ssize_t extra;

    switch (PyUnicode_KIND(s)) {
    case PyUnicode_1BYTE_KIND:
        extra = ucs1_extra(src, n);
        break;
    case PyUnicode_2BYTE_KIND:
        extra = ucs2_extra(src, n);
        break;
    default:
        extra = ucs4_extra(src, n);
        break;
    }
    if (extra == 0) {
        return Py_NewRef(s);
    }
    if (extra > PY_SSIZE_T_MAX - n) {
        return PyErr_NoMemory();
    }
    PyObject *out = PyUnicode_New(n + extra, PyUnicode_MAX_CHAR_VALUE(s));
    if (out == NULL) {
        return NULL;
    }
    void *dst = PyUnicode_DATA(out);
    switch (PyUnicode_KIND(s)) {
    case PyUnicode_1BYTE_KIND:
        ucs1_write(src, n, dst, (Py_UCS1 *)dst + n + extra);
        break;
    case PyUnicode_2BYTE_KIND:
        ucs2_write(src, n, dst);
        break;
    default:
        ucs4_write(src, n, dst);
        break;
    }
    return out;
}

/* escape_text() that consumes `s` (and passes a NULL through). */
static PyObject *
escape_steal(PyObject *s)
{
    if (s == NULL) {
        return NULL;
    }
    PyObject *result = escape_text(s);
    Py_DECREF(s);
    return result;
}

/* -- markup_of / stringify ----------------------------------------------- */

/* str(f()) for a callable f found as an attribute (consumed). */
static PyObject *
str_of_call(PyObject *func, PyObject *arg)
{
    PyObject *result = arg == NULL ? PyObject_CallNoArgs(func) : PyObject_CallOneArg(func, arg);
    Py_DECREF(func);
    if (result == NULL) {
        return NULL;
    }
    PyObject *text = PyObject_Str(result);
    Py_DECREF(result);
    return text;
}

/* markup_of() for anything but an exact str or the registered class. */
static PyObject *
markup_generic(PyObject *value)
{
    PyObject *html;
    int found = lookup_attr(value, str_html, &html);
    if (found < 0) {
        return NULL;
    }
    if (found && html != Py_None) {
        return str_of_call(html, NULL);
    }
    Py_XDECREF(html);
    return escape_steal(PyObject_Str(value));
}

/* The characters of markup_of(value), as a new reference that may be a
   registered-class instance instead of an exact str copy of it; for joins
   and concatenations, which only read the characters. */
static PyObject *
markup_text(PyObject *value)
{
    if (PyUnicode_CheckExact(value)) {
        return escape_text(value);
    }
    if (is_registered_text(value)) {
        return Py_NewRef(value);
    }
    /* Exact ints and floats have no __html__ (their types are immutable and
       their instances have no __dict__), and str() of them is made of digits,
       signs, '.', letters and no markup character: nothing to escape. */
    if (PyLong_CheckExact(value) || PyFloat_CheckExact(value)) {
        return PyObject_Str(value);
    }
    return markup_generic(value);
}

/* markup_of(value) itself (an exact str for an instance of the registered
   class, as its str(__html__()) is). */
static PyObject *
markup_of_exact(PyObject *value)
{
    if (is_registered_text(value)) {
        return PyUnicode_FromObject(value);
    }
    return markup_text(value);
}

/* The characters of stringify(value); see markup_text() for the shortcut. */
static PyObject *
plain_text(PyObject *value)
{
    if (str_is_itself(value)) {
        return Py_NewRef(value);
    }
    return PyObject_Str(value);
}

/* -- joining ------------------------------------------------------------- */

/* An owned piece of output: a str, or (for pieces_concat() only) an exact
   int written as its digits, or a 1-byte exact str escaped while it is
   copied, which then grows by `extra` characters. */
typedef struct {
    PyObject *obj;
    Py_ssize_t extra;
} Piece;

/* Pieces gathered before one join. */
typedef struct {
    Piece *items;
    Py_ssize_t len;
    Py_ssize_t cap;
    Piece inline_items[32];
} Pieces;

static void
pieces_init(Pieces *p)
{
    p->items = p->inline_items;
    p->len = 0;
    p->cap = (Py_ssize_t)Py_ARRAY_LENGTH(p->inline_items);
}

static void
pieces_clear(Pieces *p)
{
    for (Py_ssize_t i = 0; i < p->len; i++) {
        Py_DECREF(p->items[i].obj);
    }
    if (p->items != p->inline_items) {
        PyMem_Free(p->items);
    }
    pieces_init(p);
}

/* Appends `item` (consumed; NULL means an error is already set), to be
   escaped on output if `extra` is not 0. */
static int
pieces_push_extra(Pieces *p, PyObject *item, Py_ssize_t extra)
{
    if (item == NULL) {
        return -1;
    }
    if (p->len == p->cap) {
        Piece *items = NULL;
        Py_ssize_t cap = p->cap * 2;
        if ((size_t)cap <= PY_SSIZE_T_MAX / sizeof(Piece)) {
            if (p->items == p->inline_items) {
                items = PyMem_Malloc((size_t)cap * sizeof(Piece));
                if (items != NULL) {
                    memcpy(items, p->items, (size_t)p->len * sizeof(Piece));
                }
            }
            else {
                items = PyMem_Realloc(p->items, (size_t)cap * sizeof(Piece));
            }
        }
        if (items == NULL) {
            Py_DECREF(item);
            PyErr_NoMemory();
            return -1;
        }
        p->items = items;
        p->cap = cap;
    }
    p->items[p->len].obj = item;
    p->items[p->len].extra = extra;
    p->len++;
    return 0;
}

/* Appends `item` (consumed; NULL means an error is already set). */
static inline int
pieces_push(Pieces *p, PyObject *item)
{
    return pieces_push_extra(p, item, 0);
}

/* Appends markup_text(value), deferring the escaping of a 1-byte exact str
   to pieces_concat(), which escapes it straight into the result.  An exact
   int is kept as is (pieces_concat() writes its digits). */
static int
pieces_push_markup(Pieces *p, PyObject *value)
{
    if (PyUnicode_CheckExact(value) && PyUnicode_IS_READY(value) &&
        PyUnicode_KIND(value) == PyUnicode_1BYTE_KIND) {
        Py_ssize_t extra = ucs1_extra(PyUnicode_1BYTE_DATA(value), PyUnicode_GET_LENGTH(value));
        if (extra > PY_SSIZE_T_MAX / 8) {
            PyErr_NoMemory();
            return -1;
        }
        return pieces_push_extra(p, Py_NewRef(value), extra);
    }
    if (PyLong_CheckExact(value)) {
        return pieces_push(p, Py_NewRef(value));
    }
    return pieces_push(p, markup_text(value));
}

/* The decimal digits of v, written backwards ending just before `end`;
   returns where they start. */
static char *
format_digits(long long v, char *end)
{
    unsigned long long m = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        *--end = (char)('0' + (int)(m % 10));
        m /= 10;
    } while (m);
    if (v < 0) {
        *--end = '-';
    }
    return end;
}

/* "".join(pieces) written straight into one new str (no tuple, no second
   pass by str.join); empties `p` whatever happens.  Besides str pieces, `p`
   may hold exact ints, written as their decimal digits (what str() gives),
   so that no str is made for each number. */
static PyObject *
pieces_concat(Pieces *p)
{
    Py_ssize_t total = 0, i;
    Py_UCS4 maxchar = 0;
    PyObject *result = NULL;
    char buf[24];
    char *const buf_end = buf + sizeof(buf);

    for (i = 0; i < p->len; i++) {
        PyObject *item = p->items[i].obj;
        Py_ssize_t len;
        if (!PyUnicode_Check(item)) {  /* an exact int */
            int overflow;
            long long v = PyLong_AsLongLongAndOverflow(item, &overflow);
            if (!overflow) {
                if (v == -1 && PyErr_Occurred()) {
                    goto done;
                }
                total += buf_end - format_digits(v, buf_end);
                continue;
            }
            PyObject *text = PyObject_Str(item);
            if (text == NULL) {
                goto done;
            }
            Py_SETREF(p->items[i].obj, text);
            item = text;
        }
#if PY_VERSION_HEX < 0x030C0000
        if (PyUnicode_READY(item) < 0) {
            goto done;
        }
#endif
        len = PyUnicode_GET_LENGTH(item) + p->items[i].extra;
        /* total stays below PY_SSIZE_T_MAX - 24 here, so digits never overflow it. */
        if (len > PY_SSIZE_T_MAX - 32 - total) {
            PyErr_SetString(PyExc_OverflowError, "join() result is too long for a Python string");
            goto done;
        }
        total += len;
        Py_UCS4 item_max = PyUnicode_MAX_CHAR_VALUE(item);
        if (item_max > maxchar) {
            maxchar = item_max;
        }
    }
    if (p->len == 1 && PyUnicode_CheckExact(p->items[0].obj) && p->items[0].extra == 0) {
        result = Py_NewRef(p->items[0].obj);
        goto done;
    }
    result = PyUnicode_New(total, maxchar);
    if (result == NULL || total == 0) {
        goto done;
    }
    const int kind = PyUnicode_KIND(result);
    void *data = PyUnicode_DATA(result);
    Py_ssize_t pos = 0;
    for (i = 0; i < p->len; i++) {
        PyObject *item = p->items[i].obj;
        Py_ssize_t extra = p->items[i].extra;
        if (!PyUnicode_Check(item)) {
            const char *d = format_digits(PyLong_AsLongLong(item), buf_end);
            for (; d < buf_end; d++) {
                PyUnicode_WRITE(kind, data, pos, (Py_UCS4)(unsigned char)*d);
                pos++;
            }
            continue;
        }
        Py_ssize_t len = PyUnicode_GET_LENGTH(item);
        if (len == 0) {
            continue;
        }
        if (extra != 0) {
            if (kind == PyUnicode_1BYTE_KIND) {
                Py_UCS1 *dst = (Py_UCS1 *)data + pos;
                ucs1_write(PyUnicode_1BYTE_DATA(item), len, dst, dst + len + extra);
            }
            else {
                PyObject *escaped = escape_text(item);
                if (escaped == NULL || PyUnicode_CopyCharacters(result, pos, escaped, 0,
                                                                len + extra) < 0) {
                    Py_XDECREF(escaped);
                    Py_CLEAR(result);
                    goto done;
                }
                Py_DECREF(escaped);
            }
            pos += len + extra;
            continue;
        }
        if (PyUnicode_KIND(item) == kind) {
            memcpy((char *)data + pos * kind, PyUnicode_DATA(item), (size_t)(len * kind));
        }
        else if (PyUnicode_CopyCharacters(result, pos, item, 0, len) < 0) {
            Py_CLEAR(result);
            goto done;
        }
        pos += len;
    }
    assert(pos == total);

done:
    pieces_clear(p);
    return result;
}

/* sep.join(pieces); empties `p` whatever happens. */
static PyObject *
pieces_join(Pieces *p, PyObject *sep)
{
    if (sep == empty_str) {
        return pieces_concat(p);
    }
    PyObject *seq = PyTuple_New(p->len);
    if (seq == NULL) {
        pieces_clear(p);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < p->len; i++) {
        assert(p->items[i].extra == 0);
        PyTuple_SET_ITEM(seq, i, p->items[i].obj);
    }
    p->len = 0;
    pieces_clear(p);
    PyObject *result = PyUnicode_Join(sep, seq);
    Py_DECREF(seq);
    return result;
}

/* Iterates like a for loop, without an iterator object for exact lists and
   tuples.  A list is re-measured at each step, as list iterators do, since
   __html__ or __str__ may change it. */
typedef struct {
    PyObject *seq;
    PyObject *iter;
    Py_ssize_t index;
} Items;

static int
items_init(Items *it, PyObject *obj)
{
    it->index = 0;
    it->seq = NULL;
    it->iter = NULL;
    if (PyList_CheckExact(obj) || PyTuple_CheckExact(obj)) {
        it->seq = Py_NewRef(obj);
        return 0;
    }
    it->iter = PyObject_GetIter(obj);
    return it->iter == NULL ? -1 : 0;
}

/* 1 with a new reference in *item, 0 at the end, -1 on error. */
static int
items_next(Items *it, PyObject **item)
{
    if (it->seq != NULL) {
        if (it->index >= PySequence_Fast_GET_SIZE(it->seq)) {
            return 0;
        }
        *item = Py_NewRef(PySequence_Fast_GET_ITEM(it->seq, it->index));
        it->index++;
        return 1;
    }
    *item = PyIter_Next(it->iter);
    if (*item != NULL) {
        return 1;
    }
    return PyErr_Occurred() ? -1 : 0;
}

static void
items_clear(Items *it)
{
    Py_CLEAR(it->seq);
    Py_CLEAR(it->iter);
}

/* markup_text() for pieces_concat(): an exact int is kept as is (its
   digits are written by pieces_concat). */
static PyObject *
join_markup(PyObject *value)
{
    if (PyLong_CheckExact(value)) {
        return Py_NewRef(value);
    }
    return markup_text(value);
}

/* plain_text() for pieces_concat(), keeping exact ints as join_markup(). */
static PyObject *
join_plain(PyObject *value)
{
    if (PyLong_CheckExact(value)) {
        return Py_NewRef(value);
    }
    return plain_text(value);
}

/* Fills `pieces` (initialised here) with convert(x) for x in iterable,
   skipping None if asked; 0, or -1 with `pieces` empty. */
static int
collect_converted(Pieces *pieces, PyObject *iterable, PyObject *(*convert)(PyObject *),
                  int skip_none)
{
    Items it;
    PyObject *item;
    int status;

    pieces_init(pieces);
    if (items_init(&it, iterable) < 0) {
        return -1;
    }
    while ((status = items_next(&it, &item)) > 0) {
        if (skip_none && item == Py_None) {
            Py_DECREF(item);
            continue;
        }
        int pushed = convert == join_markup ? pieces_push_markup(pieces, item)
                                            : pieces_push(pieces, convert(item));
        Py_DECREF(item);
        if (pushed < 0) {
            status = -1;
            break;
        }
    }
    items_clear(&it);
    if (status < 0) {
        pieces_clear(pieces);
        return -1;
    }
    return 0;
}

/* sep.join(convert(x) for x in iterable), skipping None if asked. */
static PyObject *
join_converted(PyObject *sep, PyObject *iterable, PyObject *(*convert)(PyObject *),
               int skip_none)
{
    Pieces pieces;

    if (collect_converted(&pieces, iterable, convert, skip_none) < 0) {
        return NULL;
    }
    return pieces_join(&pieces, sep);
}

/* -- format_field ---------------------------------------------------------- */

/* builtins.format(obj, spec), including its check on spec. */
static PyObject *
format_with(PyObject *obj, PyObject *spec)
{
    if (!PyUnicode_Check(spec)) {
        PyErr_Format(PyExc_TypeError, "format() argument 2 must be str, not %.200s",
                     Py_TYPE(spec)->tp_name);
        return NULL;
    }
    return PyObject_Format(obj, spec);
}

/* 1 if `spec` is markup (it has __html__), 0 if not, -1 on error. */
static int
is_markup(PyObject *spec)
{
    if (PyUnicode_CheckExact(spec)) {
        return 0;
    }
    PyObject *html;
    int found = lookup_attr(spec, str_html, &html);
    if (found > 0) {
        found = html != Py_None;
        Py_DECREF(html);
    }
    return found;
}

/* format(text, spec) for markup text, escaping what the spec adds: a spec
   cuts a str and pads it with its fill character, which is text unless the
   spec itself is markup (a fill from a template's data must not close an
   attribute).  Pads with a character that needs no escaping, the usual
   case, cost nothing more. */
static PyObject *
format_markup(PyObject *text, PyObject *spec)
{
    PyObject *formatted = format_with(text, spec);
    if (formatted == NULL || PyUnicode_GET_LENGTH(spec) == 0) {
        return formatted;
    }
    int trusted = is_markup(spec);
    if (trusted) {
        if (trusted < 0) {
            Py_CLEAR(formatted);
        }
        return formatted;
    }
    /* A fill other than " " or "0" is the character before an align character. */
    Py_UCS4 fill = PyUnicode_READ_CHAR(spec, 0);
    Py_UCS4 align = PyUnicode_GET_LENGTH(spec) < 2 ? 0 : PyUnicode_READ_CHAR(spec, 1);
    if (!(align == '<' || align == '>' || align == '=' || align == '^') ||
        !(fill < 64 && escape_extra[fill])) {
        return formatted;
    }
    /* Where the text went: the same spec on as many NULs (the fill is not one). */
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    PyObject *nuls = PyUnicode_New(n, 0);
    if (nuls == NULL) {
        Py_DECREF(formatted);
        return NULL;
    }
    memset(PyUnicode_1BYTE_DATA(nuls), 0, (size_t)n);
    PyObject *layout = PyObject_Format(nuls, spec);
    Py_DECREF(nuls);
    if (layout == NULL) {
        Py_DECREF(formatted);
        return NULL;
    }
    Py_ssize_t total = PyUnicode_GET_LENGTH(layout);
    Py_ssize_t start = PyUnicode_FindChar(layout, 0, 0, total, 1);
    Py_ssize_t end = PyUnicode_FindChar(layout, 0, 0, total, -1) + 1;
    Py_DECREF(layout);
    if (start < -1) {
        Py_DECREF(formatted);
        return NULL;
    }
    if (start == -1) {
        return escape_steal(formatted);
    }
    PyObject *parts[3] = {
        escape_steal(PyUnicode_Substring(formatted, 0, start)),
        PyUnicode_Substring(formatted, start, end),
        escape_steal(PyUnicode_Substring(formatted, end, total)),
    };
    Py_DECREF(formatted);
    PyObject *result = NULL;
    if (parts[0] != NULL && parts[1] != NULL && parts[2] != NULL) {
        PyObject *left = PyUnicode_Concat(parts[0], parts[1]);
        result = left == NULL ? NULL : PyUnicode_Concat(left, parts[2]);
        Py_XDECREF(left);
    }
    for (int i = 0; i < 3; i++) {
        Py_XDECREF(parts[i]);
    }
    return result;
}

/* format_field(value, -1, spec): no conversion. */
static PyObject *
field_markup(PyObject *value, PyObject *spec)
{
    if (!PyUnicode_CheckExact(value)) {
        PyObject *func, *text;
        int truth;

        if (is_registered_text(value)) {
            /* format(str(value.__html__()), spec) if spec else ... */
            truth = PyObject_IsTrue(spec);
            if (truth < 0) {
                return NULL;
            }
            text = PyUnicode_FromObject(value);
            if (text == NULL || !truth) {
                return text;
            }
            PyObject *result = format_markup(text, spec);
            Py_DECREF(text);
            return result;
        }
        int found = lookup_attr(value, str_html_format, &func);
        if (found < 0) {
            return NULL;
        }
        if (found && func != Py_None) {
            return str_of_call(func, spec);
        }
        Py_XDECREF(func);
        found = lookup_attr(value, str_html, &func);
        if (found < 0) {
            return NULL;
        }
        if (found && func != Py_None) {
            truth = PyObject_IsTrue(spec);
            if (truth < 0) {
                Py_DECREF(func);
                return NULL;
            }
            text = str_of_call(func, NULL);
            if (text == NULL || !truth) {
                return text;
            }
            PyObject *result = format_markup(text, spec);
            Py_DECREF(text);
            return result;
        }
        Py_XDECREF(func);
    }
    return escape_steal(format_with(value, spec));
}

static PyObject *
format_field_impl(PyObject *value, PyObject *conversion, PyObject *spec)
{
    /* Exactly int: an int subclass could compare equal to a code it is not. */
    if (!PyLong_CheckExact(conversion)) {
        PyErr_Format(PyExc_TypeError, "format_field() conversion must be int, not %.200s",
                     Py_TYPE(conversion)->tp_name);
        return NULL;
    }
    int overflow;
    long code = PyLong_AsLongAndOverflow(conversion, &overflow);
    if (!overflow && code == -1) {
        return field_markup(value, spec);
    }
    if (!overflow && (code == 's' || code == 'r' || code == 'a')) {
        PyObject *converted = code == 's' ? PyObject_Str(value)
                              : code == 'r' ? PyObject_Repr(value)
                              : PyObject_ASCII(value);
        if (converted == NULL) {
            return NULL;
        }
        PyObject *result = format_with(converted, spec);
        Py_DECREF(converted);
        return escape_steal(result);
    }
    PyErr_Format(PyExc_ValueError, "format_field() got an unknown conversion code %R",
                 conversion);
    return NULL;
}

/* -- % formatting ------------------------------------------------------------
 *
 * As in the Python twin: each conversion is formatted on the raw value and
 * escaped afterwards, numeric conversions pass through unescaped, and a
 * format whose specs are all bare positional %s takes a faster path.  A
 * malformed spec ends the parse and keeps its error, raised only when
 * formatting reaches it, so errors come in the same order as with str.
 */

enum { ITEM_LITERAL, ITEM_SPEC, ITEM_CUT_SHORT };

typedef struct {
    PyObject *text;      /* literal text, or the spec without its key ("%-5.2f") */
    PyObject *key;       /* mapping key, or NULL */
    PyObject *error;     /* ValueError message raised on reaching the spec, or NULL */
    Py_UCS4 conv;        /* conversion character (ITEM_SPEC only) */
    int type;
    int stars;           /* how many '*' take a width or precision from the arguments */
    int incomplete_key;  /* "%(" without its ")": needs a mapping before failing */
} FormatItem;

typedef struct {
    PyObject_VAR_HEAD
    Py_ssize_t nitems;
    Py_ssize_t nspecs;
    int simple;          /* every spec is a bare positional %s */
    FormatItem items[1];
} ParsedFormat;

static void
parsed_format_dealloc(ParsedFormat *self)
{
    for (Py_ssize_t i = 0; i < self->nitems; i++) {
        Py_XDECREF(self->items[i].text);
        Py_XDECREF(self->items[i].key);
        Py_XDECREF(self->items[i].error);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static inline int
is_numeric_conversion(Py_UCS4 c)
{
    return c < 128 && c != 0 && strchr("diouxXeEfFgG", (int)c) != NULL;
}

static inline int
is_format_flag(Py_UCS4 c)
{
    return c == '#' || c == '0' || c == '-' || c == ' ' || c == '+';
}

static inline int
is_length_modifier(Py_UCS4 c)
{
    return c == 'h' || c == 'l' || c == 'L';
}

/* Appends literal text (consumed; NULL means an error is already set). */
static int
parsed_push_literal(ParsedFormat *pf, PyObject *text)
{
    if (text == NULL) {
        return -1;
    }
    FormatItem *item = &pf->items[pf->nitems++];
    memset(item, 0, sizeof(*item));
    item->type = ITEM_LITERAL;
    item->text = text;
    return 0;
}

/* Appends a spec; takes over the references in *spec. */
static void
parsed_push_spec(ParsedFormat *pf, const FormatItem *spec)
{
    pf->items[pf->nitems++] = *spec;
    pf->nspecs++;
    if (spec->type != ITEM_SPEC || spec->key != NULL || spec->error != NULL ||
        spec->conv != 's' || PyUnicode_GET_LENGTH(spec->text) != 2) {
        pf->simple = 0;
    }
}

static ParsedFormat *
parse_format(PyObject *fmt)
{
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(fmt) < 0) {
        return NULL;
    }
#endif
    const Py_ssize_t n = PyUnicode_GET_LENGTH(fmt);
    const int kind = PyUnicode_KIND(fmt);
    const void *data = PyUnicode_DATA(fmt);
    Py_ssize_t i, percents = 0;

    for (i = 0; i < n; i++) {
        percents += PyUnicode_READ(kind, data, i) == '%';
    }
    /* Each '%' adds at most a literal and a spec; then a trailing literal. */
    ParsedFormat *pf = PyObject_NewVar(ParsedFormat, &ParsedFormat_Type, 2 * percents + 1);
    if (pf == NULL) {
        return NULL;
    }
    pf->nitems = 0;
    pf->nspecs = 0;
    pf->simple = 1;

    Py_ssize_t literal_start = 0;
    i = 0;
    for (;;) {
        i = PyUnicode_FindChar(fmt, '%', i, n, 1);
        if (i == -2) {
            goto error;
        }
        if (i == -1) {
            break;
        }
        Py_ssize_t start = i++;
        if (i < n && PyUnicode_READ(kind, data, i) == '%') {
            /* Only an immediate "%%" is a literal percent; fmt[start] is one. */
            if (parsed_push_literal(pf, PyUnicode_Substring(fmt, literal_start, start + 1)) < 0) {
                goto error;
            }
            literal_start = ++i;
            continue;
        }
        if (start > literal_start &&
            parsed_push_literal(pf, PyUnicode_Substring(fmt, literal_start, start)) < 0) {
            goto error;
        }
        literal_start = n;

        FormatItem spec;
        memset(&spec, 0, sizeof(spec));
        spec.type = ITEM_SPEC;
        if (i < n && PyUnicode_READ(kind, data, i) == '(') {
            Py_ssize_t depth = 1, j = i + 1;
            for (; j < n && depth; j++) {
                Py_UCS4 c = PyUnicode_READ(kind, data, j);
                depth += c == '(' ? 1 : c == ')' ? -1 : 0;
            }
            if (depth) {
                spec.type = ITEM_CUT_SHORT;
                spec.incomplete_key = 1;
                spec.error = PyUnicode_FromString("incomplete format key");
                if (spec.error == NULL) {
                    goto error;
                }
                parsed_push_spec(pf, &spec);
                return pf;
            }
            spec.key = PyUnicode_Substring(fmt, i + 1, j - 1);
            if (spec.key == NULL) {
                goto error;
            }
            i = j;
        }
        Py_ssize_t spec_start = i;
        while (i < n && is_format_flag(PyUnicode_READ(kind, data, i))) {
            i++;
        }
        for (int part = 0; part < 2; part++) {  /* width, then precision */
            if (part == 1) {
                if (i >= n || PyUnicode_READ(kind, data, i) != '.') {
                    break;
                }
                i++;
            }
            if (i < n && PyUnicode_READ(kind, data, i) == '*') {
                spec.stars++;
                i++;
            }
            else {
                while (i < n && Py_UNICODE_ISDIGIT(PyUnicode_READ(kind, data, i))) {
                    i++;
                }
            }
        }
        while (i < n && is_length_modifier(PyUnicode_READ(kind, data, i))) {
            i++;
        }
        if (i >= n) {
            spec.type = ITEM_CUT_SHORT;
            spec.error = PyUnicode_FromString("incomplete format");
            if (spec.error == NULL) {
                Py_XDECREF(spec.key);
                goto error;
            }
            parsed_push_spec(pf, &spec);
            return pf;
        }
        spec.conv = PyUnicode_READ(kind, data, i++);
        literal_start = i;
        if (spec.key == NULL) {
            spec.text = PyUnicode_Substring(fmt, start, i);
        }
        else {
            PyObject *rest = PyUnicode_Substring(fmt, spec_start, i);
            spec.text = rest == NULL ? NULL : PyUnicode_FromFormat("%%%U", rest);
            Py_XDECREF(rest);
        }
        if (spec.text != NULL && !is_numeric_conversion(spec.conv) && spec.conv != 's' &&
            spec.conv != 'r' && spec.conv != 'a' && spec.conv != 'c') {
            PyObject *ch = PyUnicode_FromOrdinal((int)spec.conv);
            spec.error = ch == NULL ? NULL
                         : PyUnicode_FromFormat("unsupported format character %R (0x%x) at index %zd",
                                                ch, (unsigned int)spec.conv, i - 1);
            Py_XDECREF(ch);
            if (spec.error == NULL) {
                Py_CLEAR(spec.text);
            }
        }
        if (spec.text == NULL) {
            Py_XDECREF(spec.key);
            goto error;
        }
        parsed_push_spec(pf, &spec);
    }
    if (literal_start < n &&
        parsed_push_literal(pf, PyUnicode_Substring(fmt, literal_start, n)) < 0) {
        goto error;
    }
    return pf;

error:
    Py_DECREF(pf);
    return NULL;
}

/* parse_format() through a bounded cache, as the Python twin's lru_cache. */
static ParsedFormat *
get_parsed_format_by_value(PyObject *fmt)
{
    /* A str subclass with its own hash or equality must not share entries. */
    int cacheable = PyUnicode_CheckExact(fmt) ||
                    (Py_TYPE(fmt)->tp_hash == PyUnicode_Type.tp_hash &&
                     Py_TYPE(fmt)->tp_richcompare == PyUnicode_Type.tp_richcompare);
    if (cacheable) {
        PyObject *cached = PyDict_GetItemWithError(format_cache, fmt);
        if (cached != NULL) {
            return (ParsedFormat *)Py_NewRef(cached);
        }
        if (PyErr_Occurred()) {
            return NULL;
        }
    }
    ParsedFormat *pf = parse_format(fmt);
    if (pf == NULL || !cacheable) {
        return pf;
    }
    if (PyDict_GET_SIZE(format_cache) >= FORMAT_CACHE_SIZE) {
        PyDict_Clear(format_cache);
    }
    /* Exact str keys keep the dict on its fast str-only lookup path. */
    PyObject *key = PyUnicode_FromObject(fmt);
    if (key == NULL || PyDict_SetItem(format_cache, key, (PyObject *)pf) < 0) {
        Py_XDECREF(key);
        Py_DECREF(pf);
        return NULL;
    }
    Py_DECREF(key);
    return pf;
}

/* In front of the cache: the parses of recently used format objects, by
   identity (a template's literals are the same objects at every call), which
   saves hashing and comparing a str subclass key.  A parse depends only on
   the characters, which a str cannot change; the entries hold references, so
   an address cannot be reused while it is here. */
#define RECENT_FORMATS 64
static struct {
    PyObject *fmt;
    ParsedFormat *pf;
} recent_formats[RECENT_FORMATS];

static ParsedFormat *
get_parsed_format(PyObject *fmt)
{
    size_t slot = ((size_t)(uintptr_t)fmt >> 4) % RECENT_FORMATS;
    if (recent_formats[slot].fmt == fmt) {
        return (ParsedFormat *)Py_NewRef(recent_formats[slot].pf);
    }
    ParsedFormat *pf = get_parsed_format_by_value(fmt);
    if (pf == NULL) {
        return NULL;
    }
    PyObject *old_fmt = recent_formats[slot].fmt;
    ParsedFormat *old_pf = recent_formats[slot].pf;
    recent_formats[slot].fmt = Py_NewRef(fmt);
    recent_formats[slot].pf = (ParsedFormat *)Py_NewRef(pf);
    /* Released last: a str subclass's __del__ may run Python code. */
    Py_XDECREF(old_fmt);
    Py_XDECREF(old_pf);
    return pf;
}

/* One conversion: spec % (*star_args, value). */
static PyObject *
format_one(const FormatItem *item, PyObject *const *star_args, PyObject *value)
{
    int escape = !is_numeric_conversion(item->conv);
    PyObject *shown = NULL;

    if (escape && item->conv == 's' && !PyUnicode_CheckExact(value)) {
        if (is_registered_text(value)) {
            escape = 0;
        }
        else {
            PyObject *html;
            int found = lookup_attr(value, str_html, &html);
            if (found < 0) {
                return NULL;
            }
            if (found && html != Py_None) {
                shown = str_of_call(html, NULL);
                if (shown == NULL) {
                    return NULL;
                }
                escape = 0;
            }
            else {
                Py_XDECREF(html);
            }
        }
    }
    if (shown == NULL) {
        shown = Py_NewRef(value);
    }
    PyObject *fargs = PyTuple_New(item->stars + 1);
    if (fargs == NULL) {
        Py_DECREF(shown);
        return NULL;
    }
    for (int s = 0; s < item->stars; s++) {
        PyTuple_SET_ITEM(fargs, s, Py_NewRef(star_args[s]));
    }
    PyTuple_SET_ITEM(fargs, item->stars, shown);
    PyObject *result = PyUnicode_Format(item->text, fargs);
    Py_DECREF(fargs);
    return escape ? escape_steal(result) : result;
}

static PyObject *
raise_value_error(PyObject *message)
{
    PyErr_SetObject(PyExc_ValueError, message);
    return NULL;
}

/* The general path: a spec at a time, with str's errors in str's order. */
static PyObject *
format_mod_general(ParsedFormat *pf, PyObject *arg, PyObject *args, int is_tuple)
{
    const Py_ssize_t nargs = PyTuple_GET_SIZE(args);
    PyObject *const *arg_items = PySequence_Fast_ITEMS(args);
    PyObject *mapping = NULL;
    Pieces pieces;
    Py_ssize_t index = 0;

    /* The test str itself makes. */
    if (!is_tuple && !PyUnicode_Check(arg) && PyMapping_Check(arg)) {
        mapping = arg;
    }
    pieces_init(&pieces);
    for (Py_ssize_t i = 0; i < pf->nitems; i++) {
        const FormatItem *item = &pf->items[i];
        PyObject *keyed = NULL;  /* the mapping's value for a keyed spec */
        PyObject *const *source;
        Py_ssize_t nsource, pos;

        if (item->type == ITEM_LITERAL) {
            if (pieces_push(&pieces, Py_NewRef(item->text)) < 0) {
                goto error;
            }
            continue;
        }
        if (item->key != NULL || item->incomplete_key) {
            if (mapping == NULL) {
                PyErr_SetString(PyExc_TypeError, "format requires a mapping");
                goto error;
            }
            if (item->key == NULL) {
                raise_value_error(item->error);
                goto error;
            }
            /* As with str, a keyed spec takes its value (and any '*') from
               the mapping and uses up the positional arguments. */
            keyed = PyObject_GetItem(mapping, item->key);
            if (keyed == NULL) {
                goto error;
            }
            source = &keyed;
            nsource = 1;
            pos = 0;
            index = nargs;
        }
        else {
            source = arg_items;
            nsource = nargs;
            pos = index;
        }
        Py_ssize_t star_pos = pos;
        const char *type_error = NULL;
        for (int s = 0; s < item->stars && type_error == NULL; s++, pos++) {
            if (pos >= nsource) {
                type_error = "not enough arguments for format string";
            }
            else if (!PyLong_Check(source[pos])) {
                type_error = "* wants int";
            }
        }
        if (type_error == NULL && item->type == ITEM_CUT_SHORT) {
            Py_XDECREF(keyed);
            raise_value_error(item->error);
            goto error;
        }
        if (type_error == NULL && pos >= nsource) {
            type_error = "not enough arguments for format string";
        }
        if (type_error != NULL) {
            Py_XDECREF(keyed);
            PyErr_SetString(PyExc_TypeError, type_error);
            goto error;
        }
        if (item->key == NULL) {
            index = pos + 1;
        }
        if (item->error != NULL) {
            Py_XDECREF(keyed);
            raise_value_error(item->error);
            goto error;
        }
        PyObject *text = format_one(item, source + star_pos, source[pos]);
        Py_XDECREF(keyed);
        if (pieces_push(&pieces, text) < 0) {
            goto error;
        }
    }
    if (mapping == NULL && index < nargs) {
        PyErr_SetString(PyExc_TypeError, "not all arguments converted during string formatting");
        goto error;
    }
    return pieces_join(&pieces, empty_str);

error:
    pieces_clear(&pieces);
    return NULL;
}

/* format_mod(fmt, arg) for a str fmt: the markup as a str. */
static PyObject *
format_mod_impl(PyObject *fmt, PyObject *arg)
{
    ParsedFormat *pf = get_parsed_format(fmt);
    if (pf == NULL) {
        return NULL;
    }
    int is_tuple = PyTuple_Check(arg);
    PyObject *args = NULL, *result = NULL;
    /* The simple path reads the arguments in place: no 1-tuple for one. */
    PyObject *const *argv = is_tuple ? &PyTuple_GET_ITEM(arg, 0) : &arg;
    Py_ssize_t argc = is_tuple ? PyTuple_GET_SIZE(arg) : 1;
    if (!pf->simple || argc != pf->nspecs) {
        args = is_tuple ? Py_NewRef(arg) : PyTuple_Pack(1, arg);
        if (args != NULL) {
            result = format_mod_general(pf, arg, args, is_tuple);
        }
        goto done;
    }
    Pieces pieces;
    Py_ssize_t next = 0;
    pieces_init(&pieces);
    for (Py_ssize_t i = 0; i < pf->nitems; i++) {
        const FormatItem *item = &pf->items[i];
        int pushed = item->type == ITEM_LITERAL ? pieces_push(&pieces, Py_NewRef(item->text))
                                                : pieces_push_markup(&pieces, argv[next++]);
        if (pushed < 0) {
            pieces_clear(&pieces);
            goto done;
        }
    }
    result = pieces_concat(&pieces);

done:
    Py_XDECREF(args);
    Py_DECREF(pf);
    return result;
}

/* -- the str.format proxy ----------------------------------------------------
 *
 * Stands in for a format() argument (or the format_map() mapping) so that
 * whatever str.format reaches through it gets escaped: attribute and item
 * access return new proxies, __format__ is format_field.  Proxies only ever
 * reach str.format, so they cannot be part of a cycle.
 *
 * As in the Python twin, the format string is rewritten first so that a
 * conversion is applied before the spec and escaping after it: "!r" becomes
 * a lookup of the attribute "\0r", which converts into a FIELD_TEXT proxy,
 * and a field inside a spec gets "\0p", a FIELD_PLAIN proxy, unescaped,
 * since what it gives is a spec (whose padding format_field escapes).
 */

enum { FIELD_MARKUP, FIELD_TEXT, FIELD_PLAIN };

typedef struct {
    PyObject_HEAD
    PyObject *value;
    int mode;
} FieldProxy;

/* A proxy for `value` (consumed; NULL passes through). */
static PyObject *
proxy_wrap_mode(PyObject *value, int mode)
{
    if (value == NULL) {
        return NULL;
    }
    FieldProxy *proxy = PyObject_New(FieldProxy, &FieldProxy_Type);
    if (proxy == NULL) {
        Py_DECREF(value);
        return NULL;
    }
    proxy->value = value;
    proxy->mode = mode;
    return (PyObject *)proxy;
}

static PyObject *
proxy_wrap(PyObject *value)
{
    return proxy_wrap_mode(value, FIELD_MARKUP);
}

/* Appends `piece` (consumed; NULL means an error is already set) to `out`. */
static int
push_piece(PyObject *out, PyObject *piece)
{
    if (piece == NULL) {
        return -1;
    }
    int status = PyList_Append(out, piece);
    Py_DECREF(piece);
    return status;
}

/* Appends fmt rewritten as described above to the list `out`; in_spec for
   the fields of a spec. */
static int
rewrite_fields(PyObject *fmt, int in_spec, int depth, PyObject *out)
{
    PyObject *parsed = PyObject_CallOneArg(formatter_parser, fmt);
    PyObject *iter = parsed == NULL ? NULL : PyObject_GetIter(parsed);
    PyObject *entry;
    int status = iter == NULL ? -1 : 0;

    Py_XDECREF(parsed);
    while (status == 0 && (entry = PyIter_Next(iter)) != NULL) {
        PyObject *literal, *field, *spec, *conversion;
        status = PyArg_ParseTuple(entry, "UOOO", &literal, &field, &spec, &conversion) ? 0 : -1;
        if (status == 0) {
            PyObject *once = PyUnicode_Replace(literal, str_lbrace, str_lbrace2, -1);
            status = push_piece(out, once == NULL ? NULL
                                     : PyUnicode_Replace(once, str_rbrace, str_rbrace2, -1));
            Py_XDECREF(once);
        }
        if (status == 0 && field != Py_None) {
            Py_UCS4 conv = conversion == Py_None ? 0 : PyUnicode_READ_CHAR(conversion, 0);
            status = push_piece(out, PyUnicode_FromFormat("{%U", field));
            if (status == 0 && (conv == 's' || conv == 'r' || conv == 'a')) {
                status = push_piece(out, PyUnicode_FromFormat(".%c%c", 0, (int)conv));
            }
            else if (status == 0 && conv != 0) {
                /* str.format's own error, in its place. */
                status = push_piece(out, PyUnicode_FromFormat("!%U", conversion));
            }
            if (status == 0 && in_spec) {
                status = push_piece(out, PyUnicode_FromFormat(".%cp", 0));
            }
            if (status == 0 && PyUnicode_GET_LENGTH(spec) > 0) {
                status = push_piece(out, PyUnicode_FromString(":"));
                /* str.format refuses fields nested deeper than this itself. */
                if (status == 0) {
                    status = depth < 2 ? rewrite_fields(spec, 1, depth + 1, out)
                                       : push_piece(out, Py_NewRef(spec));
                }
            }
            if (status == 0) {
                status = push_piece(out, PyUnicode_FromString("}"));
            }
        }
        Py_DECREF(entry);
    }
    if (status == 0 && PyErr_Occurred()) {
        status = -1;
    }
    Py_XDECREF(iter);
    return status;
}

/* The rewritten format string (a new reference), through a bounded cache;
   a malformed one is left as it is: str.format then raises, after what it
   formats before the fault, as with str. */
static PyObject *
rewrite_format(PyObject *self)
{
    /* self itself as the key, unless its class has its own hash or equality. */
    if (Py_TYPE(self)->tp_hash == PyUnicode_Type.tp_hash &&
        Py_TYPE(self)->tp_richcompare == PyUnicode_Type.tp_richcompare) {
        PyObject *cached = PyDict_GetItemWithError(rewrite_cache, self);
        if (cached != NULL || PyErr_Occurred()) {
            Py_XINCREF(cached);
            return cached;
        }
    }
    PyObject *fmt = PyUnicode_FromObject(self);  /* the characters, as an exact str */
    if (fmt == NULL) {
        return NULL;
    }
    PyObject *result = NULL;
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        Py_DECREF(fmt);
        return NULL;
    }
    if (rewrite_fields(fmt, 0, 1, out) == 0) {
        result = PyUnicode_Join(empty_str, out);
    }
    else if (PyErr_ExceptionMatches(PyExc_ValueError)) {
        PyErr_Clear();
        result = Py_NewRef(fmt);
    }
    Py_DECREF(out);
    if (result != NULL) {
        if (PyDict_GET_SIZE(rewrite_cache) >= FORMAT_CACHE_SIZE) {
            PyDict_Clear(rewrite_cache);
        }
        /* A template's format strings are the same objects at every call:
           keyed by the object itself, a lookup succeeds on identity. */
        PyObject *key = PyUnicode_CheckExact(self) || is_registered_text(self) ? self : fmt;
        if (PyDict_SetItem(rewrite_cache, key, result) < 0) {
            Py_CLEAR(result);
        }
    }
    Py_DECREF(fmt);
    return result;
}

static void
proxy_dealloc(FieldProxy *self)
{
    Py_DECREF(self->value);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
proxy_getattro(FieldProxy *self, PyObject *name)
{
    /* The attributes of rewrite_fields(): "\0" and a letter. */
    if (PyUnicode_Check(name) && PyUnicode_GET_LENGTH(name) == 2 &&
        PyUnicode_READ_CHAR(name, 0) == 0) {
        switch (PyUnicode_READ_CHAR(name, 1)) {
        case 'p':
            return proxy_wrap_mode(Py_NewRef(self->value), FIELD_PLAIN);
        case 's':
            return proxy_wrap_mode(PyObject_Str(self->value), FIELD_TEXT);
        case 'r':
            return proxy_wrap_mode(PyObject_Repr(self->value), FIELD_TEXT);
        case 'a':
            return proxy_wrap_mode(PyObject_ASCII(self->value), FIELD_TEXT);
        default:
            break;
        }
    }
    return proxy_wrap(PyObject_GetAttr(self->value, name));
}

static PyObject *
proxy_subscript(FieldProxy *self, PyObject *key)
{
    return proxy_wrap(PyObject_GetItem(self->value, key));
}

static PyObject *
proxy_str(FieldProxy *self)
{
    return escape_steal(PyObject_Str(self->value));
}

static PyObject *
proxy_repr(FieldProxy *self)
{
    return escape_steal(PyObject_Repr(self->value));
}

static PyObject *
proxy_format(FieldProxy *self, PyObject *spec)
{
    switch (self->mode) {
    case FIELD_MARKUP:
        return field_markup(self->value, spec);
    case FIELD_TEXT:
        return escape_steal(format_with(self->value, spec));
    default:
        return format_with(self->value, spec);
    }
}

static PyMappingMethods proxy_as_mapping = {
    .mp_subscript = (binaryfunc)proxy_subscript,
};

static PyMethodDef proxy_methods[] = {
    {"__format__", (PyCFunction)proxy_format, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject FieldProxy_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ptl_wsgi._htmltext_c._FieldProxy",
    .tp_basicsize = sizeof(FieldProxy),
    .tp_dealloc = (destructor)proxy_dealloc,
    .tp_repr = (reprfunc)proxy_repr,
    .tp_as_mapping = &proxy_as_mapping,
    .tp_str = (reprfunc)proxy_str,
    .tp_getattro = (getattrofunc)proxy_getattro,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_methods = proxy_methods,
};

/* -- HtmlTextBase ---------------------------------------------------------- */

/* str(self) where its characters are needed (a new reference). */
static PyObject *
text_of(PyObject *self)
{
    return str_is_itself(self) ? Py_NewRef(self) : PyObject_Str(self);
}

/* HtmlTextBase.__new__(cls, value="").
 *
 * This is a static method in the type's dict, and the type's tp_new calls
 * it the way a Python class's does (see use_python_new()), so that
 * str.__new__(htmltext, s) (which ptl_wsgi.html uses) still passes str's
 * "is it safe" check, which it would not if tp_new were a C function of ours.
 */
static PyObject *
text_new(PyObject *Py_UNUSED(type), PyObject *const *args, Py_ssize_t nargs,
         PyObject *kwnames)
{
    static const char *const names[] = {"cls", "value"};
    PyObject *bound[2];

    if (bind_args("__new__", names, 2, 1, args, nargs, kwnames, bound) < 0) {
        return NULL;
    }
    PyObject *value = bound[1] == NULL ? empty_str : bound[1];
    if (PyUnicode_CheckExact(value)) {
        Py_INCREF(value);
    }
    else {
        value = is_registered_text(value) ? PyUnicode_FromObject(value) : NULL;
        if (value == NULL && !PyErr_Occurred()) {
            PyObject *html;
            int found = lookup_attr(bound[1], str_html, &html);
            if (found < 0) {
                return NULL;
            }
            if (found && html != Py_None) {
                value = str_of_call(html, NULL);
            }
            else {
                Py_XDECREF(html);
                value = PyObject_Str(bound[1]);
            }
        }
        if (value == NULL) {
            return NULL;
        }
    }
    /* The real str.__new__, so that `cls` gets all of its checks. */
    PyObject *call[2] = {bound[0], value};
    PyObject *result = PyObject_Vectorcall(str_new, call, 2, NULL);
    Py_DECREF(value);
    return result;
}

static PyObject *
text_html(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    return Py_NewRef(self);
}

/* self + markup_of(other) (or the reverse): NotImplemented unless other is
   a str or has __html__. */
static PyObject *
text_concat(PyObject *self, PyObject *other, int reflected)
{
    if (!PyUnicode_Check(other)) {
        PyObject *html;
        int found = lookup_attr(other, str_html, &html);
        if (found < 0) {
            return NULL;
        }
        Py_XDECREF(html);
        if (!found) {
            Py_RETURN_NOTIMPLEMENTED;
        }
    }
    PyObject *markup = markup_text(other);
    if (markup == NULL) {
        return NULL;
    }
    PyObject *result;
    if (reflected) {
        PyObject *text = text_of(self);
        result = text == NULL ? NULL : PyUnicode_Concat(markup, text);
        Py_XDECREF(text);
    }
    else {
        result = PyUnicode_Concat(self, markup);
    }
    Py_DECREF(markup);
    return new_text_steal(Py_TYPE(self), result);
}

/* nb_add serves both __add__ and __radd__. */
static PyObject *
text_add(PyObject *a, PyObject *b)
{
    if (PyObject_TypeCheck(a, &HtmlTextBase_Type)) {
        return text_concat(a, b, 0);
    }
    return text_concat(b, a, 1);
}

/* __mul__ and __rmul__: str.__mul__ raises (never NotImplemented) for a
   count that is not an index, and so does this. */
static PyObject *
text_mul(PyObject *a, PyObject *b)
{
    int left = PyObject_TypeCheck(a, &HtmlTextBase_Type);
    PyObject *self = left ? a : b;
    Py_ssize_t count = PyNumber_AsSsize_t(left ? b : a, PyExc_OverflowError);
    if (count == -1 && PyErr_Occurred()) {
        return NULL;
    }
    return new_text_steal(Py_TYPE(self), PyUnicode_Type.tp_as_sequence->sq_repeat(self, count));
}

/* Only ever __mod__: "%s" % htmltext must stay plain str formatting. */
static PyObject *
text_mod(PyObject *a, PyObject *b)
{
    if (!PyObject_TypeCheck(a, &HtmlTextBase_Type)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    PyObject *fmt = text_of(a);
    if (fmt == NULL) {
        return NULL;
    }
    PyObject *result = format_mod_impl(fmt, b);
    Py_DECREF(fmt);
    return new_text_steal(Py_TYPE(a), result);
}

static PyObject *
text_join(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"iterable"};
    PyObject *iterable;

    if (bind_args("join", names, 1, 1, args, nargs, kwnames, &iterable) < 0) {
        return NULL;
    }
    return new_text_steal(Py_TYPE(self), join_converted(self, iterable, markup_text, 0));
}

static PyObject *
text_format(PyObject *self, PyObject *args, PyObject *kwargs)
{
    const Py_ssize_t n = PyTuple_GET_SIZE(args);
    PyObject *call_kwargs = NULL, *result = NULL;
    PyObject *call_args = PyTuple_New(n + 1);

    if (call_args == NULL) {
        return NULL;
    }
    PyObject *fmt = rewrite_format(self);
    if (fmt == NULL) {
        Py_DECREF(call_args);
        return NULL;
    }
    PyTuple_SET_ITEM(call_args, 0, fmt);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *proxy = proxy_wrap(Py_NewRef(PyTuple_GET_ITEM(args, i)));
        if (proxy == NULL) {
            goto done;
        }
        PyTuple_SET_ITEM(call_args, i + 1, proxy);
    }
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) > 0) {
        PyObject *key, *value;
        Py_ssize_t pos = 0;
        call_kwargs = PyDict_New();
        if (call_kwargs == NULL) {
            goto done;
        }
        while (PyDict_Next(kwargs, &pos, &key, &value)) {
            PyObject *proxy = proxy_wrap(Py_NewRef(value));
            if (proxy == NULL || PyDict_SetItem(call_kwargs, key, proxy) < 0) {
                Py_XDECREF(proxy);
                goto done;
            }
            Py_DECREF(proxy);
        }
    }
    result = new_text_steal(Py_TYPE(self), PyObject_Call(str_format, call_args, call_kwargs));

done:
    Py_DECREF(call_args);
    Py_XDECREF(call_kwargs);
    return result;
}

static PyObject *
text_format_map(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"mapping"};
    PyObject *mapping;

    if (bind_args("format_map", names, 1, 1, args, nargs, kwnames, &mapping) < 0) {
        return NULL;
    }
    PyObject *fmt = rewrite_format(self);
    if (fmt == NULL) {
        return NULL;
    }
    PyObject *proxy = proxy_wrap(Py_NewRef(mapping));
    if (proxy == NULL) {
        Py_DECREF(fmt);
        return NULL;
    }
    PyObject *call[2] = {fmt, proxy};
    PyObject *result = PyObject_Vectorcall(str_format_map, call, 2, NULL);
    Py_DECREF(proxy);
    Py_DECREF(fmt);
    return new_text_steal(Py_TYPE(self), result);
}

static PyNumberMethods text_as_number = {
    .nb_add = text_add,
    .nb_multiply = text_mul,
    .nb_remainder = text_mod,
};

static PyMethodDef text_methods[] = {
    {"__new__", CFUNC(text_new), METH_FASTCALL | METH_KEYWORDS | METH_STATIC,
     PyDoc_STR("Trust value: its __html__() if it has one, else str(value).")},
    {"__html__", text_html, METH_NOARGS, PyDoc_STR("Return self: it is markup already.")},
    {"join", CFUNC(text_join), METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("Like str.join, escaping each item that is not markup.")},
    {"format", CFUNC(text_format), METH_VARARGS | METH_KEYWORDS,
     PyDoc_STR("Like str.format, escaping every argument that is not markup.")},
    {"format_map", CFUNC(text_format_map), METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("Like str.format_map, escaping every value that is not markup.")},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject HtmlTextBase_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ptl_wsgi._htmltext_c.HtmlTextBase",
    .tp_as_number = &text_as_number,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = PyDoc_STR("The operators of htmltext; ptl_wsgi.html adds the rest of the str API."),
    .tp_methods = text_methods,
};

/* -- TemplateIO -------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *html;   /* any object, like the Python twin's slot */
    PyObject *parts;  /* _parts: a list of str, or NULL until __init__ */
} TemplateIO;

/* The AttributeError of an unset slot in the Python twin. */
static int
missing_attr(PyObject *self, const char *name)
{
    const char *type_name = Py_TYPE(self)->tp_name;
    const char *dot = strrchr(type_name, '.');
    PyErr_Format(PyExc_AttributeError, "'%.100s' object has no attribute '%s'",
                 dot == NULL ? type_name : dot + 1, name);
    return -1;
}

/* bool(self.html) */
static int
templateio_is_html(TemplateIO *self)
{
    PyObject *html = self->html;
    if (html == Py_True || html == Py_False) {
        return html == Py_True;
    }
    if (html == NULL) {
        return missing_attr((PyObject *)self, "html");
    }
    Py_INCREF(html);  /* __bool__ may reassign self.html */
    int truth = PyObject_IsTrue(html);
    Py_DECREF(html);
    return truth;
}

static int
templateio_add(TemplateIO *self, PyObject *value)
{
    if (value == Py_None) {
        return 0;
    }
    if (self->parts == NULL) {
        return missing_attr((PyObject *)self, "_parts");
    }
    /* self._parts.append is fetched before the value is converted, as in
       Python; _parts is public state in both twins, so it may be replaced
       by anything with an append method. */
    PyObject *parts = Py_NewRef(self->parts);
    PyObject *append = NULL;
    if (!PyList_CheckExact(parts) && (append = PyObject_GetAttr(parts, str_append)) == NULL) {
        Py_DECREF(parts);
        return -1;
    }
    int html = templateio_is_html(self);
    /* What markup_of() and stringify() give, not markup_text()'s shortcut:
       _parts shows the very objects. */
    PyObject *text = html < 0 ? NULL
                     : html   ? markup_of_exact(value)
                              : (PyUnicode_CheckExact(value) ? Py_NewRef(value) : PyObject_Str(value));
    int status = -1;
    if (text != NULL && append == NULL) {
        status = PyList_Append(parts, text);
    }
    else if (text != NULL) {
        PyObject *result = PyObject_CallOneArg(append, text);
        status = result == NULL ? -1 : 0;
        Py_XDECREF(result);
    }
    Py_XDECREF(text);
    Py_XDECREF(append);
    Py_DECREF(parts);
    return status;
}

static int
templateio_init(TemplateIO *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"html", NULL};
    PyObject *html = Py_False;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:TemplateIO", kwlist, &html)) {
        return -1;
    }
    int truth = PyObject_IsTrue(html);
    if (truth < 0) {
        return -1;
    }
    Py_XSETREF(self->html, Py_NewRef(truth ? Py_True : Py_False));
    PyObject *parts = PyList_New(0);
    if (parts == NULL) {
        return -1;
    }
    Py_XSETREF(self->parts, parts);
    return 0;
}

static int
templateio_traverse(TemplateIO *self, visitproc visit, void *arg)
{
    Py_VISIT(self->html);
    Py_VISIT(self->parts);
    return 0;
}

static int
templateio_clear(TemplateIO *self)
{
    Py_CLEAR(self->html);
    Py_CLEAR(self->parts);
    return 0;
}

static void
templateio_dealloc(TemplateIO *self)
{
    PyObject_GC_UnTrack(self);
    templateio_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
templateio_iadd(PyObject *self, PyObject *value)
{
    if (!PyObject_TypeCheck(self, &TemplateIO_Type)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    if (templateio_add((TemplateIO *)self, value) < 0) {
        return NULL;
    }
    return Py_NewRef(self);
}

static PyObject *
templateio_call(TemplateIO *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"value", NULL};
    PyObject *value;

    if (kwargs == NULL && PyTuple_GET_SIZE(args) == 1) {
        value = PyTuple_GET_ITEM(args, 0);
    }
    else if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:__call__", kwlist, &value)) {
        return NULL;
    }
    if (templateio_add(self, value) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* "".join(self._parts) */
static PyObject *
templateio_text(TemplateIO *self)
{
    if (self->parts == NULL) {
        missing_attr((PyObject *)self, "_parts");
        return NULL;
    }
    return PyUnicode_Join(empty_str, self->parts);
}

static PyObject *
templateio_getvalue(TemplateIO *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *text = templateio_text(self);
    if (text == NULL) {
        return NULL;
    }
    int html = templateio_is_html(self);
    if (html <= 0) {
        if (html < 0) {
            Py_CLEAR(text);
        }
        return text;
    }
    return new_text_steal(text_type, text);
}

static PyObject *
templateio_repr(TemplateIO *self)
{
    if (self->html == NULL) {
        missing_attr((PyObject *)self, "html");
        return NULL;
    }
    PyObject *html = PyObject_Format(self->html, empty_str);
    if (html == NULL) {
        return NULL;
    }
    PyObject *text = templateio_text(self);
    PyObject *result = NULL;
    if (text != NULL) {
        result = PyUnicode_FromFormat("<TemplateIO html=%U %R>", html, text);
        Py_DECREF(text);
    }
    Py_DECREF(html);
    return result;
}

static PyNumberMethods templateio_as_number = {
    .nb_inplace_add = templateio_iadd,
};

static PyMethodDef templateio_methods[] = {
    {"getvalue", (PyCFunction)templateio_getvalue, METH_NOARGS,
     PyDoc_STR("The text so far: htmltext when html is true, else str.")},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef templateio_members[] = {
    {"html", Py_T_OBJECT_EX, offsetof(TemplateIO, html), 0,
     PyDoc_STR("Whether added values are escaped.")},
    {"_parts", Py_T_OBJECT_EX, offsetof(TemplateIO, parts), 0,
     PyDoc_STR("The text added so far, a list of str.")},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject TemplateIO_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ptl_wsgi._htmltext_c.TemplateIO",
    .tp_basicsize = sizeof(TemplateIO),
    .tp_dealloc = (destructor)templateio_dealloc,
    .tp_repr = (reprfunc)templateio_repr,
    .tp_as_number = &templateio_as_number,
    .tp_call = (ternaryfunc)templateio_call,
    .tp_str = (reprfunc)templateio_text,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = PyDoc_STR(
        "TemplateIO(html=False)\n\n"
        "Accumulates output; with html=True it escapes what it is given.\n"
        "io += value and io(value) add a value (None is skipped);\n"
        "io.getvalue() returns the text so far (htmltext when html is true)."),
    .tp_traverse = (traverseproc)templateio_traverse,
    .tp_clear = (inquiry)templateio_clear,
    .tp_methods = templateio_methods,
    .tp_members = templateio_members,
    .tp_init = (initproc)templateio_init,
    .tp_new = PyType_GenericNew,
};

static PyTypeObject ParsedFormat_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ptl_wsgi._htmltext_c._ParsedFormat",
    .tp_basicsize = offsetof(ParsedFormat, items),
    .tp_itemsize = sizeof(FormatItem),
    .tp_dealloc = (destructor)parsed_format_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
};

/* -- module functions ------------------------------------------------------ */

static const char *const value_param[] = {"value"};
static const char *const parts_param[] = {"parts"};

static PyObject *
mod_register(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs,
             PyObject *kwnames)
{
    static const char *const names[] = {"cls"};
    PyObject *cls;

    if (bind_args("register", names, 1, 1, args, nargs, kwnames, &cls) < 0) {
        return NULL;
    }
    /* Results are created by calling str's tp_new directly, so check once
       that str.__new__(cls, "") is allowed. */
    PyObject *call[2] = {cls, empty_str};
    PyObject *probe = PyObject_Vectorcall(str_new, call, 2, NULL);
    if (probe == NULL) {
        return NULL;
    }
    Py_DECREF(probe);
    Py_SETREF(text_type, (PyTypeObject *)Py_NewRef(cls));
    Py_RETURN_NONE;
}

static PyObject *
mod_escape_str(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs,
               PyObject *kwnames)
{
    static const char *const names[] = {"s"};
    PyObject *s;

    if (bind_args("escape_str", names, 1, 1, args, nargs, kwnames, &s) < 0) {
        return NULL;
    }
    if (!PyUnicode_Check(s)) {
        PyErr_Format(PyExc_TypeError, "escape_str() argument must be str, not %.200s",
                     Py_TYPE(s)->tp_name);
        return NULL;
    }
    return escape_text(s);
}

static PyObject *
mod_markup_of(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs,
              PyObject *kwnames)
{
    PyObject *value;

    if (bind_args("markup_of", value_param, 1, 1, args, nargs, kwnames, &value) < 0) {
        return NULL;
    }
    return markup_of_exact(value);
}

static PyObject *
mod_stringify(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs,
              PyObject *kwnames)
{
    PyObject *value;

    if (bind_args("stringify", value_param, 1, 1, args, nargs, kwnames, &value) < 0) {
        return NULL;
    }
    return PyUnicode_CheckExact(value) ? Py_NewRef(value) : PyObject_Str(value);
}

static PyObject *
mod_htmlescape(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs,
               PyObject *kwnames)
{
    PyObject *value;

    if (bind_args("htmlescape", value_param, 1, 1, args, nargs, kwnames, &value) < 0) {
        return NULL;
    }
    if (Py_TYPE(value) == text_type) {
        return Py_NewRef(value);
    }
    return new_text_steal(text_type, markup_text(value));
}

static PyObject *
mod_html_join(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs,
              PyObject *kwnames)
{
    PyObject *parts;

    if (bind_args("html_join", parts_param, 1, 1, args, nargs, kwnames, &parts) < 0) {
        return NULL;
    }
    /* What a template with a single output value joins: that value, when it
       is already an instance of the registered class, is the result (str
       instances are immutable: a copy could not differ). */
    if ((PyTuple_CheckExact(parts) || PyList_CheckExact(parts)) &&
        PySequence_Fast_GET_SIZE(parts) == 1 &&
        is_registered_text(PySequence_Fast_GET_ITEM(parts, 0))) {
        return Py_NewRef(PySequence_Fast_GET_ITEM(parts, 0));
    }
    Pieces pieces;
    if (collect_converted(&pieces, parts, join_markup, 1) < 0) {
        return NULL;
    }
    /* The same for a single piece left once None is skipped. */
    if (pieces.len == 1 && is_registered_text(pieces.items[0].obj)) {
        PyObject *result = pieces.items[0].obj;
        pieces.len = 0;
        pieces_clear(&pieces);
        return result;
    }
    return new_text_steal(text_type, pieces_concat(&pieces));
}

static PyObject *
mod_plain_join(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs,
               PyObject *kwnames)
{
    PyObject *parts;

    if (bind_args("plain_join", parts_param, 1, 1, args, nargs, kwnames, &parts) < 0) {
        return NULL;
    }
    return join_converted(empty_str, parts, join_plain, 1);
}

static PyObject *
mod_format_field(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs,
                 PyObject *kwnames)
{
    static const char *const names[] = {"value", "conversion", "spec"};
    PyObject *bound[3];

    if (bind_args("format_field", names, 3, 3, args, nargs, kwnames, bound) < 0) {
        return NULL;
    }
    return format_field_impl(bound[0], bound[1], bound[2]);
}

static PyObject *
mod_format_mod(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs,
               PyObject *kwnames)
{
    static const char *const names[] = {"fmt", "arg"};
    PyObject *bound[2];

    if (bind_args("format_mod", names, 2, 2, args, nargs, kwnames, bound) < 0) {
        return NULL;
    }
    if (!PyUnicode_Check(bound[0])) {
        PyErr_Format(PyExc_TypeError, "format_mod() argument 'fmt' must be str, not %.200s",
                     Py_TYPE(bound[0])->tp_name);
        return NULL;
    }
    return format_mod_impl(bound[0], bound[1]);
}

/* Output values of compiled templates' fast path.  A str, int, float or
   htmltext goes to the output list as it is (the final join escapes it, and
   its text cannot change before then); anything else is formatted now, by
   the rule of the construct the value came from. */
static inline int
is_simple_output(PyObject *v)
{
    return PyUnicode_CheckExact(v) || PyLong_CheckExact(v) || PyFloat_CheckExact(v) ||
           Py_TYPE(v) == text_type;
}

static PyObject *
mod_field_output(PyObject *Py_UNUSED(module), PyObject *value)
{
    if (is_simple_output(value)) {
        return Py_NewRef(value);
    }
    return new_text_steal(text_type, field_markup(value, empty_str));
}

static PyObject *
mod_percent_output(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "percent_output() takes exactly 2 arguments (%zd given)",
                     nargs);
        return NULL;
    }
    PyObject *value = args[0], *fmt = args[1];
    if (is_simple_output(value)) {
        return Py_NewRef(value);
    }
    if (fmt != Py_None && PyTuple_Check(value)) {
        /* As str reads it: the tuple's own items, whatever a subclass says. */
        if (PyTuple_GET_SIZE(value) != 1) {
            PyObject *raised = PyNumber_Remainder(fmt, value);
            if (raised == NULL) {
                return NULL; /* str's own error for the wrong number of values */
            }
            Py_DECREF(raised);
            PyErr_SetString(PyExc_ValueError, "percent_output(): fmt must have one field");
            return NULL;
        }
        value = PyTuple_GET_ITEM(value, 0);
        if (is_simple_output(value)) {
            return Py_NewRef(value);
        }
    }
    if (Py_TYPE(value) == text_type) {
        return Py_NewRef(value);
    }
    return new_text_steal(text_type, markup_text(value));
}

#define FASTCALL_KW (METH_FASTCALL | METH_KEYWORDS)

static PyMethodDef module_methods[] = {
    {"register", CFUNC(mod_register), FASTCALL_KW,
     PyDoc_STR("Tell this twin which class its functions must return.")},
    {"escape_str", CFUNC(mod_escape_str), FASTCALL_KW,
     PyDoc_STR("Escape & < > \" ' in s; return s itself when nothing needs it.")},
    {"markup_of", CFUNC(mod_markup_of), FASTCALL_KW,
     PyDoc_STR("The markup text for value: its __html__() if it has one, else escaped str().")},
    {"stringify", CFUNC(mod_stringify), FASTCALL_KW,
     PyDoc_STR("Return value as a plain str (str(), without escaping).")},
    {"htmlescape", CFUNC(mod_htmlescape), FASTCALL_KW,
     PyDoc_STR("Return value as htmltext: escaped, unless it has __html__.")},
    {"html_join", CFUNC(mod_html_join), FASTCALL_KW,
     PyDoc_STR("Join template output as htmltext, escaping untrusted parts, skipping None.")},
    {"plain_join", CFUNC(mod_plain_join), FASTCALL_KW,
     PyDoc_STR("Join template output as plain text, skipping None.")},
    {"format_field", CFUNC(mod_format_field), FASTCALL_KW,
     PyDoc_STR("Markup for one f-string field: convert, apply spec, then escape.")},
    {"format_mod", CFUNC(mod_format_mod), FASTCALL_KW,
     PyDoc_STR("fmt % arg with every text conversion escaped; returns markup as str.")},
    {"field_output", (PyCFunction)mod_field_output, METH_O,
     PyDoc_STR("An f-string or str.format field's output: value itself if it is a str, int, "
               "float or htmltext, else format_field(value, -1, '') as htmltext.")},
    {"percent_output", CFUNC(mod_percent_output), METH_FASTCALL,
     PyDoc_STR("A %s field's output: value itself if it is a str, int, float or htmltext, "
               "else its markup as htmltext; a tuple is fmt's values unless fmt is None.")},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef htmltext_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "ptl_wsgi._htmltext_c",
    .m_doc = "C twin of ptl_wsgi._htmltext_py; use ptl_wsgi.html instead of importing it.",
    .m_size = -1,
    .m_methods = module_methods,
};

/* Makes calling `type` run the __new__ in its dict, as for a Python class
 * with a __new__, so that HtmlTextBase(x) is text_new() like htmltext(x).
 *
 * A C tp_new of our own would do that too, but str.__new__(cls, s) refuses
 * a cls with a C tp_new other than str's between it and str ("not safe"),
 * and ptl_wsgi.html and the Python twin's users build results that way.
 * That check steps over Python classes, recognised by their tp_new, which
 * calls the type's __new__: borrow that tp_new from a throwaway class.
 */
static int
use_python_new(PyTypeObject *type)
{
    PyObject *new_method = PyDict_GetItemWithError(type->tp_dict, str_dunder_new);
    if (new_method == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_SystemError, "HtmlTextBase has no __new__");
        }
        return -1;
    }
    PyObject *probe = PyObject_CallFunction((PyObject *)&PyType_Type, "s(O){sO}", "probe",
                                            (PyObject *)&PyUnicode_Type, "__new__", new_method);
    if (probe == NULL) {
        return -1;
    }
    type->tp_new = ((PyTypeObject *)probe)->tp_new;
    Py_DECREF(probe);
    PyType_Modified(type);
    return 0;
}

static int
init_statics(void)
{
    if (format_cache != NULL) {
        return 0;
    }
    HtmlTextBase_Type.tp_base = &PyUnicode_Type;
    if ((str_dunder_new = PyUnicode_InternFromString("__new__")) == NULL) {
        return -1;
    }
    if (PyType_Ready(&HtmlTextBase_Type) < 0 || PyType_Ready(&TemplateIO_Type) < 0 ||
        PyType_Ready(&FieldProxy_Type) < 0 || PyType_Ready(&ParsedFormat_Type) < 0 ||
        use_python_new(&HtmlTextBase_Type) < 0) {
        return -1;
    }
    PyObject *str_type = (PyObject *)&PyUnicode_Type;
    text_type = (PyTypeObject *)Py_NewRef(str_type);
    if ((empty_str = PyUnicode_New(0, 0)) == NULL ||
        (str_html = PyUnicode_InternFromString("__html__")) == NULL ||
        (str_html_format = PyUnicode_InternFromString("__html_format__")) == NULL ||
        (str_append = PyUnicode_InternFromString("append")) == NULL ||
        (str_new = PyObject_GetAttrString(str_type, "__new__")) == NULL ||
        (str_format = PyObject_GetAttrString(str_type, "format")) == NULL ||
        (str_format_map = PyObject_GetAttrString(str_type, "format_map")) == NULL ||
        (format_cache = PyDict_New()) == NULL || (new_args = PyTuple_New(1)) == NULL ||
        (rewrite_cache = PyDict_New()) == NULL || (str_lbrace = PyUnicode_FromString("{")) == NULL ||
        (str_lbrace2 = PyUnicode_FromString("{{")) == NULL ||
        (str_rbrace = PyUnicode_FromString("}")) == NULL ||
        (str_rbrace2 = PyUnicode_FromString("}}")) == NULL) {
        return -1;
    }
    PyObject *string_module = PyImport_ImportModule("_string");
    if (string_module == NULL) {
        return -1;
    }
    formatter_parser = PyObject_GetAttrString(string_module, "formatter_parser");
    Py_DECREF(string_module);
    if (formatter_parser == NULL) {
        return -1;
    }
    PyObject_GC_UnTrack(new_args);
    init_escape_tables();
    return 0;
}

PyMODINIT_FUNC
PyInit__htmltext_c(void)
{
    if (init_statics() < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&htmltext_module);
    if (module == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(module, "HtmlTextBase", (PyObject *)&HtmlTextBase_Type) < 0 ||
        PyModule_AddObjectRef(module, "TemplateIO", (PyObject *)&TemplateIO_Type) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
