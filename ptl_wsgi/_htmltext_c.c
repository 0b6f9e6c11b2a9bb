/* C twin of ptl_wsgi/_htmltext_py.py.
 *
 * The Python twin is the reference: every name exported here gives the same
 * results, result types and exceptions.  This file holds what measurements
 * justify (benchmarks/RESULTS.md): escaping, the joins of compiled templates,
 * their per-field fast paths, and t-strings.  Operators that no benchmark
 * reaches (htmltext's %, format() and format_map()) call the Python twin's
 * code, so there is one definition of each, and str's own % is its grammar.
 *
 * Multi-phase init: the types are heap types of each module object, and the
 * state (the registered class, a few interned names) lives in the module,
 * so every interpreter, subinterpreters included, gets its own.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <string.h>
#if defined(__SSE2__) || defined(_M_X64)
#  include <emmintrin.h>
#  define HAVE_SSE2 1
#endif

#if PY_VERSION_HEX < 0x030C0000
#  define IS_READY(s) PyUnicode_IS_READY(s)
#else
#  define IS_READY(s) 1
#endif

/* PEP 750 t-strings: string.templatelib exists from 3.14 on. */
#if PY_VERSION_HEX >= 0x030E0000
#  define HAVE_TEMPLATES 1
#endif

/* Silences -Wcast-function-type for METH_FASTCALL and METH_KEYWORDS tables. */
#define CFUNC(func) ((PyCFunction)(void (*)(void))(func))

typedef struct {
    PyTypeObject *base_type;        /* HtmlTextBase */
    PyTypeObject *text_type;        /* what results are made of: str until register() */
    PyObject *str_new;              /* str.__new__ */
    newfunc str_tp_new;             /* str's tp_new slot */
    PyObject *new_args;             /* the 1-tuple new_text() reuses */
    PyObject *empty;                /* "" */
    PyObject *s_html;               /* "__html__" */
    PyObject *s_html_format;        /* "__html_format__" */
    PyObject *twin;                 /* ptl_wsgi._htmltext_py, imported on first use */
    PyTypeObject *escaper_type;     /* ContextualEscaper */
#ifdef HAVE_TEMPLATES
    PyObject *template_type;        /* string.templatelib.Template */
    PyObject *interpolation_type;   /* string.templatelib.Interpolation */
    PyObject *s_strings, *s_interpolations, *s_value, *s_conversion, *s_format_spec;
    /* Where those fields are in the objects (member_offset()), or 0: use getattr. */
    Py_ssize_t off_strings, off_interpolations, off_value, off_conversion, off_format_spec;
#endif
    /* contextual_htmlformat(): the strings of text-only t-strings (a dict, the
       escaping engine's) and what formats any other, both from set_htmlformat(),
       which may also give contextual_fstring()'s */
    PyObject *text_only, *format_fallback, *fstring_fallback;
    /* Markup that carries CSP nonce slots and the join that keeps them
       (ptl_wsgi.escaping.nonce.carrier, from register_nonced()), or NULL. */
    PyTypeObject *nonced_type;
    PyObject *nonced_join;
    PyObject *nonce_used; /* escaping.nonce.USED: [True] once a nonce scope was entered */
} State;

static struct PyModuleDef htmltext_module;

#if PY_VERSION_HEX < 0x030B0000
/* 3.10 has no PyType_GetModuleByDef: the same walk over the MRO. */
static PyObject *
PyType_GetModuleByDef(PyTypeObject *type, PyModuleDef *def)
{
    PyObject *mro = type->tp_mro;
    for (Py_ssize_t i = 0; mro != NULL && i < PyTuple_GET_SIZE(mro); i++) {
        PyTypeObject *t = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
        if (PyType_HasFeature(t, Py_TPFLAGS_HEAPTYPE)) {
            PyObject *module = ((PyHeapTypeObject *)t)->ht_module;
            if (module != NULL && PyModule_GetDef(module) == def) {
                return module;
            }
        }
    }
    PyErr_Format(PyExc_TypeError, "PyType_GetModuleByDef: No superclass of '%s' has the given module",
                 type->tp_name);
    return NULL;
}
#endif

static inline State *
module_state(PyObject *module)
{
    return (State *)PyModule_GetState(module);
}

/* The state of the module that defined `type` or one of its bases. */
static State *
type_state(PyTypeObject *type)
{
    PyObject *module = PyType_GetModuleByDef(type, &htmltext_module);
    return module == NULL ? NULL : module_state(module);
}

/* getattr(obj, name, <missing>): 1 found, 0 missing, -1 error (only
   AttributeError is swallowed, like getattr with a default). */
static int
lookup_attr(PyObject *obj, PyObject *name, PyObject **result)
{
#if PY_VERSION_HEX >= 0x030D0000
    return PyObject_GetOptionalAttr(obj, name, result);
#else
    /* The same lookup, without making and clearing an AttributeError where the
       type's own getattr need not (measured, 3.11: format_field() of a datetime
       with a spec, two missing attributes, 26,551 instructions with
       PyObject_GetAttr and PyErr_Clear, 18,707 with this). */
    return _PyObject_LookupAttr(obj, name, result);
#endif
}

/* str.__new__(cls, s) for a class that register() checked once with
   str.__new__ itself: str's tp_new, fetched with PyType_GetSlot, without the
   per-call checks of the str.__new__ wrapper and its two argument tuples.
   Measured (benchmarks/instructions.py, htmlescape() of 10 characters, 3.11):
   2,757 instructions through str.__new__, 2,342 with this tp_new and a new
   1-tuple, 2,163 with the state's reused 1-tuple.  The reuse is safe for an
   exact str: str's tp_new then only reads its argument, runs no Python code,
   and the tuple (untracked by the GC) holds the item only during the call. */
static PyObject *
new_text(State *st, PyTypeObject *cls, PyObject *s)
{
    PyObject *args = st->new_args, *result;
    if (PyUnicode_CheckExact(s) && Py_REFCNT(args) == 1 && PyTuple_GET_ITEM(args, 0) == NULL) {
        PyTuple_SET_ITEM(args, 0, s);
        result = st->str_tp_new(cls, args, NULL);
        PyTuple_SET_ITEM(args, 0, NULL);
        return result;
    }
    if ((args = PyTuple_Pack(1, s)) == NULL) {
        return NULL;
    }
    result = st->str_tp_new(cls, args, NULL);
    Py_DECREF(args);
    return result;
}

/* new_text() that consumes `s` (and passes a NULL through). */
static PyObject *
new_text_steal(State *st, PyTypeObject *cls, PyObject *s)
{
    if (s == NULL) {
        return NULL;
    }
    PyObject *result = new_text(st, cls, s);
    Py_DECREF(s);
    return result;
}

/* An instance of the registered class: trusted markup, whose __html__ is
   itself (ptl_wsgi.html builds that class; register() checks it). */
static inline int
is_registered_text(State *st, PyObject *v)
{
    return Py_TYPE(v) == st->text_type;
}

/* Markup that carries nonce slots: output in text as it is, joined by its own join. */
static inline int
is_nonced(State *st, PyObject *v)
{
    return Py_TYPE(v) == st->nonced_type;
}

/* The parts of a join, and in *nonced whether markup carrying nonce slots is among
   them, for its own join (escaping.nonce.carrier) that keeps them: a list or tuple
   as it is, any other iterable read into a list first (as the twin does), a new
   reference.  Before register_nonced(), parts itself and *nonced 0. */
static PyObject *
parts_seq(State *st, PyObject *parts, int *nonced)
{
    *nonced = 0;
    if (st->nonced_type == NULL) {
        return Py_NewRef(parts);
    }
    PyObject *seq = PyList_CheckExact(parts) || PyTuple_CheckExact(parts)
                        ? Py_NewRef(parts)
                        : PySequence_List(parts);
    if (seq == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        if (is_nonced(st, PySequence_Fast_GET_ITEM(seq, i))) {
            *nonced = 1;
            break;
        }
    }
    return seq;
}

/* The twin's attribute `name`, the twin imported on first use (a process
   that never meets these operators does not load it). */
static PyObject *
twin_attr(State *st, const char *name)
{
    if (st->twin == NULL) {
        st->twin = PyImport_ImportModule("ptl_wsgi._htmltext_py");
        if (st->twin == NULL) {
            return NULL;
        }
    }
    return PyObject_GetAttrString(st->twin, name);
}

/* -- escaping ------------------------------------------------------------ */

/* How many characters each ASCII character grows by once escaped; the five
   escaped characters are all below 64. */
#define GROWTH(c) ((c) == '&' ? 4 : (c) == '<' || (c) == '>' ? 3 : (c) == '"' || (c) == '\'' ? 5 : 0)
static const unsigned char escape_extra[64] = {
    ['"'] = 5, ['&'] = 4, ['\''] = 5, ['<'] = 3, ['>'] = 3,
};
/* The same for every byte value, for the 1-byte loops. */
#define G4(c) GROWTH(c), GROWTH((c) + 1), GROWTH((c) + 2), GROWTH((c) + 3)
#define G16(c) G4(c), G4((c) + 4), G4((c) + 8), G4((c) + 12)
#define G64(c) G16(c), G16((c) + 16), G16((c) + 32), G16((c) + 48)
static const unsigned char ucs1_extra_table[256] = {G64(0), G64(64), G64(128), G64(192)};
/* What each escaped character is written as, NUL-padded to 8 bytes. */
static const char escape_repl8[64][8] = {
    ['"'] = "&quot;", ['&'] = "&amp;", ['\''] = "&#x27;", ['<'] = "&lt;", ['>'] = "&gt;",
};
/* What every byte value is written as, the same way (an unescaped byte is
   itself), so that one fixed-size copy writes any byte without a branch. */
#define CH(s, k) ((unsigned char)(s)[k])
#define REPL(c, k)                                                                         \
    ((c) == '&' ? CH("&amp;\0\0\0", k) : (c) == '<' ? CH("&lt;\0\0\0\0", k)                 \
     : (c) == '>' ? CH("&gt;\0\0\0\0", k) : (c) == '"' ? CH("&quot;\0\0", k)                 \
     : (c) == '\'' ? CH("&#x27;\0\0", k) : (k) == 0 ? (unsigned char)(c) : 0)
#define R1(c) {REPL(c, 0), REPL(c, 1), REPL(c, 2), REPL(c, 3), REPL(c, 4), REPL(c, 5), REPL(c, 6), REPL(c, 7)}
#define R4(c) R1(c), R1((c) + 1), R1((c) + 2), R1((c) + 3)
#define R16(c) R4(c), R4((c) + 4), R4((c) + 8), R4((c) + 12)
#define R64(c) R16(c), R16((c) + 16), R16((c) + 32), R16((c) + 48)
static const unsigned char ucs1_repl[256][8] = {R64(0), R64(64), R64(128), R64(192)};

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

/* Writes c, escaped, at dst (which ends at `end`) and moves dst on: one
   8-byte copy while there is room for it.  A macro: as an inline function
   GCC keeps an extra addition per character (3 % more instructions on a
   1,000-character string with 10 % to escape). */
#define UCS1_PUT(dst, c, end)                                                 \
    do {                                                                      \
        if ((end) - (dst) >= 8) {                                             \
            memcpy((dst), ucs1_repl[(c)], 8);                                 \
        }                                                                     \
        else {                                                                \
            memcpy((dst), ucs1_repl[(c)], (size_t)ucs1_extra_table[(c)] + 1); \
        }                                                                     \
        (dst) += ucs1_extra_table[(c)] + 1;                                   \
    } while (0)

/* Writes the escaped src to dst, which ends at `end` (exactly what
   ucs1_extra() counted).  Clean blocks of 16 are copied whole. */
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
            UCS1_PUT(dst, c, end);
        }
    }
#endif
    for (; i < n; i++) {
        Py_UCS1 c = src[i];
        UCS1_PUT(dst, c, end);
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
                for (const char *r = escape_repl8[c]; *r; r++) {         \
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

#ifdef HAVE_TEMPLATES
static PyObject *template_markup(State *st, PyObject *template);
static int marked_markup(State *st, PyObject *template, int join, PyObject **markup);

static inline int
is_template(State *st, PyObject *v)
{
    return (PyObject *)Py_TYPE(v) == st->template_type;
}

/* A field of a Template or an Interpolation (new reference): a load at the offset
   that the type's member descriptor gives (read once, member_offset()), for an
   object of exactly that type; getattr otherwise.  Both types are immutable: the
   field cannot change under us.  Measured (benchmarks/tstrings.py --instructions):
   the five getattrs of a one-value t-string were a tenth of its instructions. */
static inline PyObject *
field_of(PyObject *obj, PyObject *type, Py_ssize_t offset, PyObject *name)
{
    if (offset > 0 && (PyObject *)Py_TYPE(obj) == type) {
        PyObject *value = *(PyObject **)((char *)obj + offset);
        if (value != NULL) {
            return Py_NewRef(value);
        }
    }
    return PyObject_GetAttr(obj, name);
}

#define TEMPLATE_FIELD(st, obj, name) \
    field_of((obj), (st)->template_type, (st)->off_##name, (st)->s_##name)
#define INTERPOLATION_FIELD(st, obj, name) \
    field_of((obj), (st)->interpolation_type, (st)->off_##name, (st)->s_##name)
#endif

/* markup_of() for anything but an exact str or the registered class. */
static PyObject *
markup_generic(State *st, PyObject *value)
{
    PyObject *html;
    int found = lookup_attr(value, st->s_html, &html);
    if (found < 0) {
        return NULL;
    }
    if (found && html != Py_None) {
        return str_of_call(html, NULL);
    }
    Py_XDECREF(html);
#ifdef HAVE_TEMPLATES
    if (is_template(st, value)) {
        /* Each value escaped for where it lands, as htmlformat() makes it: by this twin
           if the engine marked its strings (out += t"..." in a TemplateIO, html_join),
           else by the engine, through htmlformat()'s fallback, which marks them. */
        PyObject *fallback = st->format_fallback;
        if (fallback != NULL) {
            PyObject *markup;
            Py_INCREF(fallback); /* (held as in contextual_format()) */
            int made = marked_markup(st, value, 1, &markup);
            if (made == 0) {
                markup = PyObject_CallOneArg(fallback, value);
                if (markup != NULL && !PyUnicode_CheckExact(markup)) {
                    Py_SETREF(markup, PyUnicode_Check(markup) ? PyUnicode_FromObject(markup)
                                                              : PyObject_Str(markup));
                }
            }
            Py_DECREF(fallback);
            return made < 0 ? NULL : markup;
        }
        /* (This twin is not ptl_wsgi.html's: the engine, through the Python twin.) */
        PyObject *in_context = twin_attr(st, "_template_markup_in_context");
        if (in_context == NULL) {
            return NULL;
        }
        PyObject *result = PyObject_CallOneArg(in_context, value);
        Py_DECREF(in_context);
        return result;
    }
#endif
    return escape_steal(PyObject_Str(value));
}

/* The characters of markup_of(value), as a new reference that may be a
   registered-class instance instead of an exact str copy of it; for joins
   and concatenations, which only read the characters. */
static PyObject *
markup_text(State *st, PyObject *value)
{
    if (PyUnicode_CheckExact(value)) {
        return escape_text(value);
    }
    if (is_registered_text(st, value)) {
        return Py_NewRef(value);
    }
    /* Exact ints and floats have no __html__ (their types are immutable and
       their instances have no __dict__), and str() of them is made of digits,
       signs, '.', letters and no markup character: nothing to escape. */
    if (PyLong_CheckExact(value) || PyFloat_CheckExact(value)) {
        return PyObject_Str(value);
    }
    return markup_generic(st, value);
}

/* markup_of(value) itself (an exact str for an instance of the registered
   class, as its str(__html__()) is). */
static PyObject *
markup_of_exact(State *st, PyObject *value)
{
    if (is_registered_text(st, value)) {
        return PyUnicode_FromObject(value);
    }
    return markup_text(st, value);
}

/* stringify(value) */
static PyObject *
plain_text(PyObject *value)
{
    return PyUnicode_CheckExact(value) ? Py_NewRef(value) : PyObject_Str(value);
}

/* -- joining ------------------------------------------------------------- */

/* An owned piece of output: a str, or (for pieces_concat() only) an exact
   int written as its digits, or a 1-byte exact str escaped while it is
   copied, which then grows by `extra` characters.  pieces_concat() keeps
   an int's value where a str's `extra` would be, read once. */
typedef struct {
    PyObject *obj;
    union {
        Py_ssize_t extra;
        long long value;
    };
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

/* Doubles the room in `p`; -1 with MemoryError. */
static int
pieces_grow(Pieces *p)
{
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
        PyErr_NoMemory();
        return -1;
    }
    p->items = items;
    p->cap = cap;
    return 0;
}

/* Appends `item` (consumed; NULL means an error is already set), to be
   escaped on output if `extra` is not 0. */
static inline int
pieces_push_extra(Pieces *p, PyObject *item, Py_ssize_t extra)
{
    if (item == NULL) {
        return -1;
    }
    if (p->len == p->cap && pieces_grow(p) < 0) {
        Py_DECREF(item);
        return -1;
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
pieces_push_markup(State *st, Pieces *p, PyObject *value)
{
    if (PyUnicode_CheckExact(value) && IS_READY(value) &&
        PyUnicode_KIND(value) == PyUnicode_1BYTE_KIND) {
        Py_ssize_t extra = ucs1_extra(PyUnicode_1BYTE_DATA(value), PyUnicode_GET_LENGTH(value));
        if (extra > PY_SSIZE_T_MAX / 8) {
            PyErr_NoMemory();
            return -1;
        }
        return pieces_push_extra(p, Py_NewRef(value), extra);
    }
    /* An exact int is written by pieces_concat(); markup as it is. */
    if (PyLong_CheckExact(value) || is_registered_text(st, value)) {
        return pieces_push(p, Py_NewRef(value));
    }
    return pieces_push(p, markup_text(st, value));
}

/* How many characters str(v) has. */
static inline Py_ssize_t
decimal_len(long long v)
{
    unsigned long long m = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    Py_ssize_t n = 1 + (v < 0);
    /* |v| <= 2**63 < 10**19: the power stops at 10**19 without overflowing. */
    for (unsigned long long power = 10; m >= power; power *= 10) {
        n++;
    }
    return n;
}

/* Writes str(v) backwards, ending just before `end`, two digits at a time. */
static inline void
write_decimal(long long v, char *end)
{
    static const char pairs[] = "00010203040506070809101112131415161718192021222324"
                                "25262728293031323334353637383940414243444546474849"
                                "50515253545556575859606162636465666768697071727374"
                                "75767778798081828384858687888990919293949596979899";
    unsigned long long m = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    for (; m >= 100; m /= 100) {
        const char *pair = pairs + 2 * (m % 100);
        *--end = pair[1];
        *--end = pair[0];
    }
    if (m >= 10) {
        *--end = pairs[2 * m + 1];
        *--end = pairs[2 * m];
    }
    else {
        *--end = (char)('0' + m);
    }
    if (v < 0) {
        *--end = '-';
    }
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
                p->items[i].value = v;
                total += decimal_len(v);
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
            long long v = p->items[i].value;
            Py_ssize_t n = decimal_len(v);
            if (kind == PyUnicode_1BYTE_KIND) {
                write_decimal(v, (char *)data + pos + n);
            }
            else {
                write_decimal(v, buf_end);
                for (Py_ssize_t k = 0; k < n; k++) {
                    PyUnicode_WRITE(kind, data, pos + k, (Py_UCS4)(unsigned char)buf_end[k - n]);
                }
            }
            pos += n;
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
    if (PyUnicode_CheckExact(sep) && PyUnicode_GET_LENGTH(sep) == 0) {
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

/* JOIN_MARKUP may leave exact ints and 1-byte strs to escape in `pieces`,
   which only pieces_concat() reads; JOIN_TEXT leaves str pieces only. */
enum { JOIN_MARKUP, JOIN_TEXT, JOIN_PLAIN };

/* Fills `pieces` (initialised here) with the markup (or the plain text) of
   each x in iterable, skipping None if asked; 0, or -1 with `pieces` empty.
   Exact ints are kept as they are (but for JOIN_TEXT): pieces_concat()
   writes their digits. */
static int
collect(State *st, Pieces *pieces, PyObject *iterable, int mode, int skip_none)
{
    Items it;
    PyObject *item;
    int status;

    pieces_init(pieces);
    if (items_init(&it, iterable) < 0) {
        return -1;
    }
    while ((status = items_next(&it, &item)) > 0) {
        int pushed = 0;
        if (!(skip_none && item == Py_None)) {
            pushed = mode == JOIN_MARKUP   ? pieces_push_markup(st, pieces, item)
                     : mode == JOIN_TEXT     ? pieces_push(pieces, markup_text(st, item))
                     : PyLong_CheckExact(item) ? pieces_push(pieces, Py_NewRef(item))
                                               : pieces_push(pieces, plain_text(item));
        }
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
is_markup(State *st, PyObject *spec)
{
    if (PyUnicode_CheckExact(spec)) {
        return 0;
    }
    PyObject *html;
    int found = lookup_attr(spec, st->s_html, &html);
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
format_markup(State *st, PyObject *text, PyObject *spec)
{
    PyObject *formatted = format_with(text, spec);
    if (formatted == NULL || PyUnicode_GET_LENGTH(spec) == 0) {
        return formatted;
    }
    /* A precision that cut the markup would leave a tag or an attribute open: what is
       left of it is text, escaped (the visible failure). */
    Py_ssize_t whole = PyUnicode_Find(formatted, text, 0, PyUnicode_GET_LENGTH(formatted), 1);
    if (whole < -1) {
        Py_DECREF(formatted);
        return NULL;
    }
    if (whole == -1) {
        return escape_steal(formatted);
    }
    int trusted = is_markup(st, spec);
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
    Pieces pieces;
    pieces_init(&pieces);
    int status = pieces_push(&pieces, escape_steal(PyUnicode_Substring(formatted, 0, start)));
    if (status == 0) {
        status = pieces_push(&pieces, PyUnicode_Substring(formatted, start, end));
    }
    if (status == 0) {
        status = pieces_push(&pieces, escape_steal(PyUnicode_Substring(formatted, end, total)));
    }
    Py_DECREF(formatted);
    if (status < 0) {
        pieces_clear(&pieces);
        return NULL;
    }
    return pieces_concat(&pieces);
}

/* str(func(*arg)) then format_markup() with spec, unless spec is empty. */
static PyObject *
html_then_format(State *st, PyObject *func, PyObject *spec)
{
    int truth = PyObject_IsTrue(spec);
    if (truth < 0) {
        Py_DECREF(func);
        return NULL;
    }
    PyObject *text = str_of_call(func, NULL);
    if (text == NULL || !truth) {
        return text;
    }
    PyObject *result = format_markup(st, text, spec);
    Py_DECREF(text);
    return result;
}

/* format_field(value, -1, spec): no conversion. */
static PyObject *
field_markup(State *st, PyObject *value, PyObject *spec)
{
    if (!PyUnicode_CheckExact(value)) {
        PyObject *func;
        if (is_registered_text(st, value)) {
            /* format(str(value.__html__()), spec) if spec else ... */
            int truth = PyObject_IsTrue(spec);
            if (truth < 0) {
                return NULL;
            }
            PyObject *text = PyUnicode_FromObject(value);
            if (text == NULL || !truth) {
                return text;
            }
            PyObject *result = format_markup(st, text, spec);
            Py_DECREF(text);
            return result;
        }
        int found = lookup_attr(value, st->s_html_format, &func);
        if (found < 0) {
            return NULL;
        }
        if (found && func != Py_None) {
            return str_of_call(func, spec);
        }
        Py_XDECREF(func);
        found = lookup_attr(value, st->s_html, &func);
        if (found < 0) {
            return NULL;
        }
        if (found && func != Py_None) {
            return html_then_format(st, func, spec);
        }
        Py_XDECREF(func);
    }
    return escape_steal(format_with(value, spec));
}

/* repr(), str() or ascii() for a conversion character, or NULL with no error. */
static PyObject *
convert(PyObject *value, long code)
{
    switch (code) {
    case 's':
        return PyObject_Str(value);
    case 'r':
        return PyObject_Repr(value);
    case 'a':
        return PyObject_ASCII(value);
    default:
        return NULL;
    }
}

static PyObject *
format_field_impl(State *st, PyObject *value, PyObject *conversion, PyObject *spec)
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
        return field_markup(st, value, spec);
    }
    PyObject *converted = overflow ? NULL : convert(value, code);
    if (converted == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_Format(PyExc_ValueError, "format_field() got an unknown conversion code %R",
                         conversion);
        }
        return NULL;
    }
    PyObject *result = format_with(converted, spec);
    Py_DECREF(converted);
    return escape_steal(result);
}

/* -- t-strings (PEP 750) ----------------------------------------------------- */

/* htmlformat()'s TypeError, naming the type as type(x).__name__ does. */
static PyObject *
not_a_template(PyObject *value)
{
    PyObject *name = PyObject_GetAttrString((PyObject *)Py_TYPE(value), "__name__");
    if (name != NULL) {
        PyErr_Format(PyExc_TypeError,
                     "htmlformat() argument must be a string.templatelib.Template, not %U", name);
        Py_DECREF(name);
    }
    return NULL;
}

#ifdef HAVE_TEMPLATES
/* A converted field's markup: `value` converted (!r, !s, !a), formatted with
   `spec` and escaped, as format_field() does with a conversion code. */
static PyObject *
converted_markup(PyObject *value, PyObject *conversion, PyObject *spec)
{
    PyObject *converted = NULL;
    if (PyUnicode_Check(conversion) && PyUnicode_GET_LENGTH(conversion) == 1) {
        converted = convert(value, (long)PyUnicode_READ_CHAR(conversion, 0));
    }
    if (converted == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_Format(PyExc_ValueError, "htmlformat(): unknown conversion %R", conversion);
        }
        return NULL;
    }
    PyObject *formatted = format_with(converted, spec);
    Py_DECREF(converted);
    if (formatted != NULL && !PyUnicode_CheckExact(formatted)) {
        Py_SETREF(formatted, PyObject_Str(formatted));
    }
    return formatted == NULL ? NULL : escape_steal(formatted);
}

/* One interpolation's markup, as the same f-string field in a template: a
   nested Template with no conversion and no spec is formatted as markup; with
   no conversion, format_field(value, -1, spec) (markup is kept, the spec
   applied); a converted value is formatted with its spec and escaped. */
static PyObject *
interpolation_markup(State *st, PyObject *interpolation)
{
    PyObject *value = INTERPOLATION_FIELD(st, interpolation, value);
    PyObject *conversion = value == NULL ? NULL : INTERPOLATION_FIELD(st, interpolation, conversion);
    PyObject *spec = conversion == NULL ? NULL : INTERPOLATION_FIELD(st, interpolation, format_spec);
    PyObject *result = NULL;
    if (spec == NULL) {
        goto done;
    }
    if (conversion == Py_None) {
        int empty = PyObject_Not(spec);
        if (empty < 0) {
            goto done;
        }
        if (empty && is_template(st, value)) {
            result = template_markup(st, value);
        }
        else {
            /* As an f-string field of a template: markup, its spec applied, is kept. */
            result = field_markup(st, value, spec);
        }
        goto done;
    }
    result = converted_markup(value, conversion, spec);

done:
    Py_XDECREF(value);
    Py_XDECREF(conversion);
    Py_XDECREF(spec);
    return result;
}

static PyObject *template_parts_markup(State *st, PyObject *template);

/* A literal part of a Template as its characters (what "".join() reads), not the
   str() that a str subclass could redefine; Template() takes str parts only. */
static PyObject *
literal_part(PyObject *literal)
{
    if (!PyUnicode_Check(literal)) {
        PyErr_SetString(PyExc_TypeError, "htmlformat(): malformed Template");
        return NULL;
    }
    return Py_NewRef(literal);
}

/* The markup text of a Template: literal parts trusted, interpolations by
   interpolation_markup().  Nested templates recurse: a RecursionError, as in
   the Python twin, rather than the end of the C stack. */
static PyObject *
template_markup(State *st, PyObject *template)
{
    if (!is_template(st, template)) {
        return not_a_template(template);
    }
    if (Py_EnterRecursiveCall(" while formatting a t-string")) {
        return NULL;
    }
    PyObject *result = template_parts_markup(st, template);
    Py_LeaveRecursiveCall();
    return result;
}

static PyObject *
template_parts_markup(State *st, PyObject *template)
{
    PyObject *strings = TEMPLATE_FIELD(st, template, strings);
    PyObject *interpolations = strings == NULL ? NULL : TEMPLATE_FIELD(st, template, interpolations);
    PyObject *result = NULL;
    Pieces pieces;
    pieces_init(&pieces);
    if (interpolations == NULL) {
        goto done;
    }
    /* A Template's own invariant: n interpolations between n + 1 strings. */
    if (!PyTuple_CheckExact(strings) || !PyTuple_CheckExact(interpolations) ||
        PyTuple_GET_SIZE(strings) != PyTuple_GET_SIZE(interpolations) + 1) {
        PyErr_SetString(PyExc_TypeError, "htmlformat(): malformed Template");
        goto done;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(strings); i++) {
        if (i > 0 && pieces_push(&pieces, interpolation_markup(
                                              st, PyTuple_GET_ITEM(interpolations, i - 1))) < 0) {
            goto done;
        }
        if (pieces_push(&pieces, literal_part(PyTuple_GET_ITEM(strings, i))) < 0) {
            goto done;
        }
    }
    result = pieces_concat(&pieces);

done:
    pieces_clear(&pieces);
    Py_XDECREF(strings);
    Py_XDECREF(interpolations);
    return result;
}
#endif

/* -- HtmlTextBase ---------------------------------------------------------- */

/* HtmlTextBase.__new__(cls, value="").
 *
 * A static method in the type's dict, which the type's tp_new calls the way
 * a Python class's does (see the Py_tp_new slot in module_exec()), so that
 * str.__new__(htmltext, s) (which ptl_wsgi.html uses) still passes str's
 * "is it safe" check, which it would not if tp_new were a C function of ours.
 */
static PyObject *
text_new(PyObject *Py_UNUSED(type), PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"cls", "value", NULL};
    PyObject *cls, *value = NULL;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:__new__", kwlist, &cls, &value)) {
        return NULL;
    }
    if (!PyType_Check(cls)) {
        PyErr_Format(PyExc_TypeError, "__new__(X): X is not a type object (%.200s)",
                     Py_TYPE(cls)->tp_name);
        return NULL;
    }
    /* cls is a class of this module's, or (as HtmlTextBase.__new__(str) in
       the Python twin) any other: then this module's state is not at hand. */
    State *st = type_state((PyTypeObject *)cls);
    PyObject *html_name, *str_new;
    if (st != NULL) {
        html_name = Py_NewRef(st->s_html);
        str_new = Py_NewRef(st->str_new);
    }
    else {
        PyErr_Clear();
        html_name = PyUnicode_InternFromString("__html__");
        str_new = PyObject_GetAttrString((PyObject *)&PyUnicode_Type, "__new__");
    }
    PyObject *text = NULL, *result = NULL;
    if (html_name == NULL || str_new == NULL) {
        goto done;
    }
    if (value == NULL) {
        text = PyUnicode_New(0, 0);
    }
    else if (PyUnicode_CheckExact(value)) {
        text = Py_NewRef(value);
    }
    else if (st != NULL && is_registered_text(st, value)) {
        text = PyUnicode_FromObject(value);
    }
    else {
        PyObject *html;
        int found = lookup_attr(value, html_name, &html);
        if (found < 0) {
            goto done;
        }
        if (found && html != Py_None) {
            text = str_of_call(html, NULL);
        }
        else {
            Py_XDECREF(html);
            text = PyObject_Str(value);
        }
    }
    if (text != NULL) {
        /* The real str.__new__, so that `cls` gets all of its checks. */
        PyObject *call[2] = {cls, text};
        result = PyObject_Vectorcall(str_new, call, 2, NULL);
    }

done:
    Py_XDECREF(text);
    Py_XDECREF(html_name);
    Py_XDECREF(str_new);
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
    State *st = type_state(Py_TYPE(self));
    if (st == NULL) {
        return NULL;
    }
    if (!PyUnicode_Check(other)) {
        PyObject *html;
        int found = lookup_attr(other, st->s_html, &html);
        if (found < 0) {
            return NULL;
        }
        Py_XDECREF(html);
        if (!found) {
            Py_RETURN_NOTIMPLEMENTED;
        }
    }
    PyObject *markup = markup_text(st, other);
    if (markup == NULL) {
        return NULL;
    }
    PyObject *result = reflected ? PyUnicode_Concat(markup, self) : PyUnicode_Concat(self, markup);
    Py_DECREF(markup);
    return new_text_steal(st, Py_TYPE(self), result);
}

static int
is_base_instance(PyObject *v)
{
    State *st = type_state(Py_TYPE(v));
    if (st == NULL) {
        PyErr_Clear();
        return 0;
    }
    return PyObject_TypeCheck(v, st->base_type);
}

/* nb_add serves both __add__ and __radd__. */
static PyObject *
text_add(PyObject *a, PyObject *b)
{
    if (is_base_instance(a)) {
        return text_concat(a, b, 0);
    }
    return text_concat(b, a, 1);
}

/* __mul__ and __rmul__: str.__mul__ raises (never NotImplemented) for a
   count that is not an index, and so does this. */
static PyObject *
text_mul(PyObject *a, PyObject *b)
{
    int left = is_base_instance(a);
    PyObject *self = left ? a : b;
    State *st = type_state(Py_TYPE(self));
    if (st == NULL) {
        return NULL;
    }
    Py_ssize_t count = PyNumber_AsSsize_t(left ? b : a, PyExc_OverflowError);
    if (count == -1 && PyErr_Occurred()) {
        return NULL;
    }
    /* str's repeat, on an exact str: the sequence protocol of self's own
       type would come back here. */
    PyObject *text = PyUnicode_FromObject(self);
    PyObject *repeated = text == NULL ? NULL : PySequence_Repeat(text, count);
    Py_XDECREF(text);
    return new_text_steal(st, Py_TYPE(self), repeated);
}

/* Only ever __mod__: "%s" % htmltext must stay plain str formatting.  The
   Python twin's format_mod(): str's own % is the grammar, no benchmark
   reaches this operator, and one definition serves both twins. */
static PyObject *
text_mod(PyObject *a, PyObject *b)
{
    if (!is_base_instance(a)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    State *st = type_state(Py_TYPE(a));
    PyObject *format_mod = st == NULL ? NULL : twin_attr(st, "format_mod");
    if (format_mod == NULL) {
        return NULL;
    }
    PyObject *fmt = PyObject_Str(a);
    PyObject *result = NULL;
    if (fmt != NULL) {
        PyObject *args[2] = {fmt, b};
        result = PyObject_Vectorcall(format_mod, args, 2, NULL);
        Py_DECREF(fmt);
    }
    Py_DECREF(format_mod);
    return new_text_steal(st, Py_TYPE(a), result);
}

static PyObject *
text_join(PyObject *self, PyObject *iterable)
{
    State *st = type_state(Py_TYPE(self));
    if (st == NULL) {
        return NULL;
    }
    int nonced;
    PyObject *seq = parts_seq(st, iterable, &nonced);
    if (seq == NULL) {
        return NULL;
    }
    if (nonced) {
        PyObject *joined = PyObject_CallFunctionObjArgs(st->nonced_join, seq, self, NULL);
        Py_DECREF(seq);
        return joined;
    }
    Pieces pieces;
    int failed = collect(st, &pieces, seq, JOIN_TEXT, 0);
    Py_DECREF(seq);
    if (failed < 0) {
        return NULL;
    }
    return new_text_steal(st, Py_TYPE(self), pieces_join(&pieces, self));
}

/* format() and format_map(): the Python twin's methods (see text_mod). */
static PyObject *
call_twin_method(PyObject *self, const char *name, PyObject *args, PyObject *kwargs)
{
    State *st = type_state(Py_TYPE(self));
    PyObject *base = st == NULL ? NULL : twin_attr(st, "HtmlTextBase");
    PyObject *method = base == NULL ? NULL : PyObject_GetAttrString(base, name);
    Py_XDECREF(base);
    if (method == NULL) {
        return NULL;
    }
    PyObject *result = NULL;
    PyObject *bound = PyMethod_New(method, self);
    if (bound != NULL) {
        result = PyObject_Call(bound, args, kwargs);
        Py_DECREF(bound);
    }
    Py_DECREF(method);
    return result;
}

static PyObject *
text_format(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return call_twin_method(self, "format", args, kwargs);
}

static PyObject *
text_format_map(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return call_twin_method(self, "format_map", args, kwargs);
}

static PyMethodDef text_methods[] = {
    {"__new__", CFUNC(text_new), METH_VARARGS | METH_KEYWORDS | METH_STATIC | METH_COEXIST,
     PyDoc_STR("Trust value: its __html__() if it has one, else str(value).")},
    {"__html__", text_html, METH_NOARGS, PyDoc_STR("Return self: it is markup already.")},
    {"join", text_join, METH_O, PyDoc_STR("Like str.join, escaping each item that is not markup.")},
    {"format", CFUNC(text_format), METH_VARARGS | METH_KEYWORDS,
     PyDoc_STR("Like str.format, escaping every argument that is not markup.")},
    {"format_map", CFUNC(text_format_map), METH_VARARGS | METH_KEYWORDS,
     PyDoc_STR("Like str.format_map, escaping every value that is not markup.")},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot text_slots[] = {
    {Py_nb_add, text_add},
    {Py_nb_multiply, text_mul},
    {Py_nb_remainder, text_mod},
    {Py_tp_methods, text_methods},
    {Py_tp_doc, (void *)PyDoc_STR(
         "The operators of htmltext; ptl_wsgi.html adds the rest of the str API.")},
    {0, NULL},
};

static PyType_Spec text_spec = {
    .name = "ptl_wsgi._htmltext_c.HtmlTextBase",
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = text_slots,
};

/* -- contextual escapers --------------------------------------------------- */

/* The escaper of one context (ptl_wsgi.escaping.escapers.build): the common
   values are answered here, from a plan that the Python reference makes of
   its own functions on the first call (each ASCII character's output, the
   empty value's, and the few rules that are not per character: the schemes
   of a URL's start, a leading "/" after one, the sequences the CSS filter
   refuses).  Everything else (other types, markup where a URL starts,
   characters the table leaves to the reference, any character outside ASCII
   in a URL or CSS value) goes to the reference escaper, so this file spells
   no character set of escaping.  Measured (benchmarks/contexts.py): the
   reference took 3-30x the time of a value in text; see RESULTS.md. */

#define REPL_MAX 15
#define REPL_SLOW 255 /* the reference decides */

typedef struct {
    unsigned char len;
    char text[REPL_MAX];
} Repl;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *module;
    PyTypeObject *cls;    /* the markup class made */
    PyObject *reference;  /* the Python escaper: the definition and the slow path */
    PyObject *plan;       /* makes the plan on the first call */
    Repl *table;          /* 128 outputs, once planned */
    unsigned char keep[128]; /* whether table[c] is c itself */
    Repl first_slash;     /* a leading "/" (url_slash), REPL_SLOW if not special */
    PyObject *empty, *prefix, *suffix; /* str: the output of "", what wraps an output */
    PyObject *refused;    /* tuple of lower-case ASCII str (CSS), or NULL */
    PyObject *refusal;    /* the output of a refused value (CSS), or NULL */
    unsigned char refuse[128]; /* the characters that make the filter refuse a value */
    PyObject *allowed, *script; /* tuples of scheme names (a URL's start), or NULL */
    PyObject *int_prefix, *int_suffix, *constants; /* JS values, or NULL */
    char non_ascii, ints, markup;
    char output; /* a str for the join to escape instead of markup (a BASE_q escaper) */
    char list;   /* LIST_SRCSET or LIST_URLS: a list of URLs (list_escape), else 0 */
    Repl space, comma; /* srcset: what the layer makes of " " and "," between candidates */
} Escaper;

#define LIST_SRCSET 's' /* image candidates: URL and descriptors, ","-separated */
#define LIST_URLS 'u'   /* SVG animation values: ";"-separated, each item a URL's start */

/* Characters outside ASCII that are always the reference's, whatever the plan
   says: some context escapes or ignores them (C1 controls, the soft hyphen,
   the general punctuation block with the line and paragraph separators and
   the zero-width and direction marks, surrogates, the byte order mark and the
   specials).  tests/test_contextual_twins.py checks that every escaper whose
   plan keeps non-ASCII keeps every other code point. */
static inline int
reserved_non_ascii(Py_UCS4 c)
{
    return c < 0xA0 || c == 0xAD || (c >= 0x2000 && c < 0x2070) || (c >= 0xD800 && c < 0xE000) ||
           c == 0xFEFF || (c >= 0xFFF0 && c <= 0xFFFF);
}

/* Whether the ASCII text[0:len] is one of names (a tuple of ASCII str). */
static int
among(PyObject *names, const char *text, Py_ssize_t len)
{
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(names); k++) {
        PyObject *name = PyTuple_GET_ITEM(names, k);
        if (PyUnicode_GET_LENGTH(name) == len && memcmp(PyUnicode_1BYTE_DATA(name), text, len) == 0) {
            return 1;
        }
    }
    return 0;
}

/* url.url's second rule: the value, with leading spaces and controls
   stripped and tabs and newlines dropped, is only a script scheme's name
   (the literal ":" after it would complete the scheme). */
static int
script_name(PyObject *names, const Py_UCS1 *text, Py_ssize_t n)
{
    Py_ssize_t start = 0;
    while (start < n && text[start] <= 0x20) {
        start++;
    }
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(names); k++) {
        PyObject *name = PyTuple_GET_ITEM(names, k);
        const Py_UCS1 *word = PyUnicode_1BYTE_DATA(name);
        Py_ssize_t len = PyUnicode_GET_LENGTH(name), j = 0, i;
        for (i = start; i < n; i++) {
            Py_UCS1 c = text[i];
            if (c == '\t' || c == '\n' || c == '\r') {
                continue;
            }
            if (j == len || c >= 0x80 || Py_TOLOWER(c) != word[j]) {
                break;
            }
            j++;
        }
        if (i == n && j == len) {
            return 1;
        }
    }
    return 0;
}

/* 1 if url.url's scheme rule passes the value, 0 if the reference must decide
   (it refuses the value, or the value is unusual: a character reference or a
   non-ASCII character before the first "/", "?" or "#").  The rule, as
   url.is_safe_url reads the value (references decoded, spaces and controls
   dropped): before that first "/", "?" or "#", no ":" or an allowed scheme. */
static int
url_text_passes(Escaper *e, const Py_UCS1 *text, Py_ssize_t n)
{
    char scheme[16];
    Py_ssize_t len = 0;
    int is_scheme = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS1 c = text[i];
        if (c == '/' || c == '?' || c == '#') {
            return 1; /* no scheme; nor only a scheme's name */
        }
        if (c >= 0x80) {
            return 0;
        }
        if (c <= 0x20 || c == 0x7F) {
            continue; /* ignored in a scheme */
        }
        if (c == ':') {
            return is_scheme && len > 0 && len < (Py_ssize_t)sizeof(scheme) &&
                   among(e->allowed, scheme, len);
        }
        if (c == '&') {
            /* Only an "&" that cannot start a character reference. */
            Py_UCS1 next = i + 1 < n ? text[i + 1] : ' ';
            if (!(next == ' ' || next == '\t' || next == '\n' || next == '\f' || next == '<' ||
                  next == '&' || next == ';')) {
                return 0;
            }
        }
        if (!(Py_ISALPHA(c) || (len > 0 && (Py_ISDIGIT(c) || c == '+' || c == '.' || c == '-')))) {
            is_scheme = 0;
        }
        if (len < (Py_ssize_t)sizeof(scheme)) {
            scheme[len] = (char)Py_TOLOWER(c);
        }
        len++;
    }
    return !script_name(e->script, text, n);
}

static int
url_start_passes(Escaper *e, PyObject *s, Py_ssize_t n)
{
    if (PyUnicode_KIND(s) != PyUnicode_1BYTE_KIND) {
        return 0;
    }
    return url_text_passes(e, PyUnicode_1BYTE_DATA(s), n);
}

/* Python's str.split() and str.strip() white space, in ASCII. */
static inline int
list_space(Py_UCS1 c)
{
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1C && c <= 0x1F);
}

/* A srcset descriptor as url.srcset takes it, in ASCII: digits, maybe "." and
   digits, then "w" or "x". */
static int
srcset_descriptor(const Py_UCS1 *t, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    while (i < n && Py_ISDIGIT(t[i])) {
        i++;
    }
    if (i == 0) {
        return 0;
    }
    if (i < n && t[i] == '.') {
        Py_ssize_t digits = ++i;
        while (i < n && Py_ISDIGIT(t[i])) {
            i++;
        }
        if (i == digits) {
            return 0;
        }
    }
    return i == n - 1 && (t[i] == 'w' || t[i] == 'x');
}

/* Appends (o != NULL) or counts the table's output of t[0:n]; -1: the reference's. */
static Py_ssize_t
list_put(Escaper *e, const Py_UCS1 *t, Py_ssize_t n, Py_UCS1 **o)
{
    Py_ssize_t size = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        const Repl *r = &e->table[t[i]];
        if (r->len == REPL_SLOW) {
            return -1;
        }
        if (o != NULL) {
            memcpy(*o, r->text, r->len);
            *o += r->len;
        }
        size += r->len;
    }
    return size;
}

static void
repl_put(const Repl *r, Py_UCS1 **o)
{
    memcpy(*o, r->text, r->len);
    *o += r->len;
}

/* One pass of url.srcset over ASCII text: counts (o == NULL) or writes the
   output; -1 where the reference decides (a URL the scheme rule does not pass
   at once, a character the table leaves), SRCSET_REFUSED for a descriptor that
   is not a number (the reference refuses the whole value, whatever the rest). */
#define SRCSET_REFUSED (-2)
static Py_ssize_t
srcset_pass(Escaper *e, const Py_UCS1 *text, Py_ssize_t n, Py_UCS1 **o)
{
    Py_ssize_t size = 0, start = 0;
    while (start <= n) {
        Py_ssize_t end = start;
        while (end < n && text[end] != ',') {
            end++;
        }
        if (start > 0) {
            size += e->comma.len;
            if (o != NULL) {
                repl_put(&e->comma, o);
            }
        }
        Py_ssize_t i = start, words = 0;
        while (1) {
            while (i < end && list_space(text[i])) {
                i++;
            }
            if (i == end) {
                break;
            }
            Py_ssize_t word = i;
            while (i < end && !list_space(text[i])) {
                i++;
            }
            if (words++ == 0) {
                if (!url_text_passes(e, text + word, i - word)) {
                    return -1;
                }
                Py_ssize_t got = list_put(e, text + word, i - word, o);
                if (got < 0) {
                    return -1;
                }
                size += got;
            }
            else {
                if (!srcset_descriptor(text + word, i - word)) {
                    return SRCSET_REFUSED;
                }
                size += e->space.len;
                if (o != NULL) {
                    repl_put(&e->space, o);
                }
                Py_ssize_t got = list_put(e, text + word, i - word, o);
                if (got < 0) {
                    return -1;
                }
                size += got;
            }
        }
        start = end + 1;
    }
    return size;
}

/* A list of URLs (srcset or SVG values), as list_escape() answers it: 1 with
   *out set, 0 for the reference, -1 on an error.  ASCII only. */
static int
list_escape(Escaper *e, PyObject *s, Py_ssize_t n, PyObject **out)
{
    if (PyUnicode_KIND(s) != PyUnicode_1BYTE_KIND || !PyUnicode_IS_ASCII(s)) {
        return 0;
    }
    const Py_UCS1 *text = PyUnicode_1BYTE_DATA(s);
    if (e->list == LIST_URLS) {
        /* Each ";"-separated item, white space stripped, passes as a URL's start;
           the value is then kept, through the layer's table. */
        for (Py_ssize_t start = 0; start <= n;) {
            Py_ssize_t end = start;
            while (end < n && text[end] != ';') {
                end++;
            }
            Py_ssize_t a = start, b = end;
            while (a < b && list_space(text[a])) {
                a++;
            }
            while (b > a && list_space(text[b - 1])) {
                b--;
            }
            if (b > a && !url_text_passes(e, text + a, b - a)) {
                return 0;
            }
            start = end + 1;
        }
        Py_ssize_t run = 0;
        while (run < n && e->keep[text[run]]) {
            run++;
        }
        if (run == n) {
            *out = Py_NewRef(s);
            return 1;
        }
        Py_ssize_t size = list_put(e, text, n, NULL);
        if (size < 0) {
            return 0;
        }
        PyObject *result = PyUnicode_New(size, 0x7F);
        if (result == NULL) {
            return -1;
        }
        Py_UCS1 *o = PyUnicode_1BYTE_DATA(result);
        list_put(e, text, n, &o);
        *out = result;
        return 1;
    }
    Py_ssize_t size = srcset_pass(e, text, n, NULL);
    if (size == SRCSET_REFUSED && e->refusal != NULL) {
        *out = Py_NewRef(e->refusal);
        return 1;
    }
    if (size <= 0) {
        return 0; /* (an empty output: the start of an unquoted value has its own) */
    }
    PyObject *result = PyUnicode_New(size, 0x7F);
    if (result == NULL) {
        return -1;
    }
    Py_UCS1 *o = PyUnicode_1BYTE_DATA(result);
    srcset_pass(e, text, n, &o);
    if (PyUnicode_GET_LENGTH(result) == n && memcmp(PyUnicode_1BYTE_DATA(result), text, n) == 0) {
        Py_DECREF(result);
        result = Py_NewRef(s);
    }
    *out = result;
    return 1;
}

/* Whether the ASCII text holds one of the refused sequences, ignoring case. */
static int
holds_refused(PyObject *refused, const Py_UCS1 *text, Py_ssize_t n)
{
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(refused); k++) {
        PyObject *word = PyTuple_GET_ITEM(refused, k);
        const Py_UCS1 *w = PyUnicode_1BYTE_DATA(word);
        Py_ssize_t len = PyUnicode_GET_LENGTH(word);
        for (Py_ssize_t i = 0; i + len <= n; i++) {
            Py_ssize_t j = 0;
            while (j < len && Py_TOLOWER(text[i + j]) == w[j]) {
                j++;
            }
            if (j == len) {
                return 1;
            }
        }
    }
    return 0;
}

/* The escaped text of the exact str s, whose characters are `text` (of type
   T: its kind): 1 with *out set, 0 for the reference, -1 on an error.  Every
   character outside ASCII is kept or left to the reference, so the output is
   of the input's kind.  A first scan skips the characters that stay as they
   are; a value made only of them is returned itself. */
#define DEFINE_CONTEXT_ESCAPE(NAME, T)                                                             \
    static int NAME(Escaper *e, PyObject *s, const T *text, Py_ssize_t n, PyObject **out)        \
    {                                                                                             \
        int slash = e->first_slash.len != REPL_SLOW && text[0] == '/';                            \
        Py_ssize_t run = 0, size;                                                                 \
        while (!slash && run < n && text[run] < 0x80 && e->keep[text[run]]) {                     \
            run++;                                                                                \
        }                                                                                         \
        Py_UCS4 maxchar = 0x7F;                                                                   \
        int changed = slash;                                                                      \
        size = run;                                                                               \
        for (Py_ssize_t i = run; i < n; i++) {                                                    \
            Py_UCS4 c = text[i];                                                                  \
            if (c < 0x80) {                                                                       \
                const Repl *r = i == 0 && slash ? &e->first_slash : &e->table[c];                 \
                if (r->len == REPL_SLOW) {                                                        \
                    if (e->refusal != NULL && e->refuse[c]) {                                     \
                        *out = Py_NewRef(e->refusal);                                             \
                        return 1;                                                                 \
                    }                                                                             \
                    return 0;                                                                     \
                }                                                                                 \
                size += r->len;                                                                   \
                changed |= !e->keep[c];                                                           \
            }                                                                                     \
            else {                                                                                \
                if (!e->non_ascii || reserved_non_ascii(c)) {                                     \
                    return 0;                                                                     \
                }                                                                                 \
                size++;                                                                           \
                maxchar = c > maxchar ? c : maxchar;                                              \
            }                                                                                     \
        }                                                                                         \
        /* (non_ascii is off for the CSS filter: its text is ASCII here) */                      \
        if (e->refused != NULL && holds_refused(e->refused, (const Py_UCS1 *)text, n)) {          \
            if (e->refusal != NULL) {                                                             \
                *out = Py_NewRef(e->refusal);                                                     \
                return 1;                                                                         \
            }                                                                                     \
            return 0;                                                                             \
        }                                                                                         \
        Py_ssize_t before = PyUnicode_GET_LENGTH(e->prefix);                                      \
        Py_ssize_t after = PyUnicode_GET_LENGTH(e->suffix);                                       \
        if (!changed && before == 0 && after == 0) {                                              \
            *out = Py_NewRef(s);                                                                  \
            return 1;                                                                             \
        }                                                                                         \
        PyObject *result = PyUnicode_New(before + size + after, maxchar);                         \
        if (result == NULL) {                                                                     \
            return -1;                                                                            \
        }                                                                                         \
        if (PyUnicode_KIND(result) != sizeof(T)) { /* (cannot happen: see above) */              \
            Py_DECREF(result);                                                                    \
            return 0;                                                                             \
        }                                                                                         \
        T *o = (T *)PyUnicode_DATA(result);                                                       \
        const Py_UCS1 *affix = PyUnicode_1BYTE_DATA(e->prefix);                                   \
        for (Py_ssize_t k = 0; k < before; k++) {                                                 \
            *o++ = affix[k];                                                                      \
        }                                                                                         \
        memcpy(o, text, run * sizeof(T));                                                         \
        o += run;                                                                                 \
        for (Py_ssize_t i = run; i < n; i++) {                                                    \
            T c = text[i];                                                                        \
            if (c < 0x80) {                                                                       \
                const Repl *r = i == 0 && slash ? &e->first_slash : &e->table[c];                 \
                for (int k = 0; k < r->len; k++) {                                                \
                    *o++ = (Py_UCS1)r->text[k];                                                   \
                }                                                                                 \
            }                                                                                     \
            else {                                                                                \
                *o++ = c;                                                                         \
            }                                                                                     \
        }                                                                                         \
        affix = PyUnicode_1BYTE_DATA(e->suffix);                                                  \
        for (Py_ssize_t k = 0; k < after; k++) {                                                  \
            *o++ = affix[k];                                                                      \
        }                                                                                         \
        *out = result;                                                                            \
        return 1;                                                                                 \
    }

DEFINE_CONTEXT_ESCAPE(context_escape_ucs1, Py_UCS1)
DEFINE_CONTEXT_ESCAPE(context_escape_ucs2, Py_UCS2)
DEFINE_CONTEXT_ESCAPE(context_escape_ucs4, Py_UCS4)

/* The escaped text of the exact str s: 1 with *out set, 0 for the reference,
   -1 on an error. */
static int
escaper_text(Escaper *e, PyObject *s, PyObject **out)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    if (n == 0) {
        *out = Py_NewRef(e->empty);
        return 1;
    }
    if (n > (PY_SSIZE_T_MAX - 64) / REPL_MAX) {
        return 0;
    }
    if (e->list) {
        return list_escape(e, s, n, out);
    }
    if (e->allowed != NULL && !url_start_passes(e, s, n)) {
        return 0;
    }
    switch (PyUnicode_KIND(s)) {
    case PyUnicode_1BYTE_KIND:
        return context_escape_ucs1(e, s, PyUnicode_1BYTE_DATA(s), n, out);
    case PyUnicode_2BYTE_KIND:
        return context_escape_ucs2(e, s, PyUnicode_2BYTE_DATA(s), n, out);
    default:
        return context_escape_ucs4(e, s, PyUnicode_4BYTE_DATA(s), n, out);
    }
}

/* One Repl from a plan's str (or None: the reference decides). */
static int
plan_repl(PyObject *item, Repl *r)
{
    r->len = REPL_SLOW;
    if (item == Py_None) {
        return 0;
    }
    if (!PyUnicode_CheckExact(item) || !PyUnicode_IS_ASCII(item)) {
        PyErr_SetString(PyExc_TypeError, "an escaper's plan holds ASCII str or None per character");
        return -1;
    }
    if (PyUnicode_GET_LENGTH(item) <= REPL_MAX) {
        r->len = (unsigned char)PyUnicode_GET_LENGTH(item);
        memcpy(r->text, PyUnicode_1BYTE_DATA(item), r->len);
    }
    return 0;
}

static inline int
ascii_str(PyObject *o)
{
    return PyUnicode_CheckExact(o) && PyUnicode_IS_ASCII(o);
}

/* Whether o is a tuple of ASCII str (of `size` items unless size < 0). */
static int
ascii_strs(PyObject *o, Py_ssize_t size)
{
    if (!PyTuple_CheckExact(o) || (size >= 0 && PyTuple_GET_SIZE(o) != size)) {
        return 0;
    }
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(o); k++) {
        if (!ascii_str(PyTuple_GET_ITEM(o, k))) {
            return 0;
        }
    }
    return 1;
}

static inline PyObject *
none_to_null(PyObject *o)
{
    return o == Py_None ? NULL : Py_NewRef(o);
}

/* The plan's parts, made on the first call (see _planner in
   ptl_wsgi/escaping/escapers.py for its keys). */
static int
escaper_load(Escaper *e)
{
    static const char *keys[] = {"table", "empty", "prefix", "suffix", "first_slash", "refused",
                                 "schemes", "int_affixes", "constants", "non_ascii", "ints",
                                 "markup", "refusal", "refused_chars", "list", "separators"};
    PyObject *got[Py_ARRAY_LENGTH(keys)];
    PyObject *plan = PyObject_CallNoArgs(e->plan);
    if (plan == NULL) {
        return -1;
    }
    if (e->table != NULL) { /* (made meanwhile, by another thread) */
        Py_DECREF(plan);
        return 0;
    }
    Repl *table = NULL;
    if (!PyDict_Check(plan)) {
        goto wrong;
    }
    for (size_t k = 0; k < Py_ARRAY_LENGTH(keys); k++) {
        if ((got[k] = PyDict_GetItemString(plan, keys[k])) == NULL) {
            goto wrong;
        }
    }
    PyObject *items = got[0], *schemes = got[6], *affixes = got[7], *constants = got[8];
    if (!PyTuple_CheckExact(items) || PyTuple_GET_SIZE(items) != 128 ||
        !PyUnicode_CheckExact(got[1]) || !ascii_str(got[2]) || !ascii_str(got[3]) ||
        !(got[5] == Py_None || ascii_strs(got[5], -1)) ||
        !(schemes == Py_None || (PyTuple_CheckExact(schemes) &&
                                 PyTuple_GET_SIZE(schemes) == 2 &&
                                 ascii_strs(PyTuple_GET_ITEM(schemes, 0), -1) &&
                                 ascii_strs(PyTuple_GET_ITEM(schemes, 1), -1))) ||
        !(affixes == Py_None || ascii_strs(affixes, 2)) ||
        !(constants == Py_None || ascii_strs(constants, 3)) ||
        !(got[12] == Py_None || PyUnicode_CheckExact(got[12])) || !ascii_str(got[13]) ||
        !(got[14] == Py_None || PyUnicode_CheckExact(got[14])) ||
        !(got[15] == Py_None || ascii_strs(got[15], 2))) {
        goto wrong;
    }
    char list = 0;
    if (got[14] != Py_None) {
        if (PyUnicode_CompareWithASCIIString(got[14], "srcset") == 0) {
            list = LIST_SRCSET;
        }
        else if (PyUnicode_CompareWithASCIIString(got[14], "url_list") == 0) {
            list = LIST_URLS;
        }
        /* A list needs its scheme rule, and srcset the separators' outputs. */
        if (!list || schemes == Py_None || (list == LIST_SRCSET && got[15] == Py_None)) {
            goto wrong;
        }
    }
    if ((table = PyMem_Calloc(128, sizeof(Repl))) == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    for (Py_ssize_t c = 0; c < 128; c++) {
        if (plan_repl(PyTuple_GET_ITEM(items, c), &table[c]) < 0) {
            goto error;
        }
        e->keep[c] = table[c].len == 1 && (Py_UCS1)table[c].text[0] == c;
    }
    if (plan_repl(got[4], &e->first_slash) < 0) {
        goto error;
    }
    if (list == LIST_SRCSET) {
        if (plan_repl(PyTuple_GET_ITEM(got[15], 0), &e->space) < 0 ||
            plan_repl(PyTuple_GET_ITEM(got[15], 1), &e->comma) < 0) {
            goto error;
        }
        if (e->space.len == REPL_SLOW || e->comma.len == REPL_SLOW) {
            goto wrong;
        }
    }
    e->list = list;
    char *flags[3] = {&e->non_ascii, &e->ints, &e->markup};
    for (int k = 0; k < 3; k++) {
        int truth = PyObject_IsTrue(got[9 + k]);
        if (truth < 0) {
            goto error;
        }
        *flags[k] = (char)truth;
    }
    e->empty = Py_NewRef(got[1]);
    e->prefix = Py_NewRef(got[2]);
    e->suffix = Py_NewRef(got[3]);
    e->refused = none_to_null(got[5]);
    if (schemes != Py_None) {
        e->allowed = Py_NewRef(PyTuple_GET_ITEM(schemes, 0));
        e->script = Py_NewRef(PyTuple_GET_ITEM(schemes, 1));
    }
    if (affixes != Py_None) {
        e->int_prefix = Py_NewRef(PyTuple_GET_ITEM(affixes, 0));
        e->int_suffix = Py_NewRef(PyTuple_GET_ITEM(affixes, 1));
    }
    e->constants = none_to_null(constants);
    e->refusal = none_to_null(got[12]);
    for (Py_ssize_t k = 0; k < PyUnicode_GET_LENGTH(got[13]); k++) {
        e->refuse[PyUnicode_1BYTE_DATA(got[13])[k]] = 1;
    }
    Py_DECREF(plan);
    e->table = table;
    return 0;
wrong:
    PyErr_SetString(PyExc_TypeError, "not an escaper's plan (see ptl_wsgi.escaping.escapers)");
error:
    Py_DECREF(plan);
    PyMem_Free(table);
    return -1;
}

static PyObject *
concat3(PyObject *a, PyObject *b, PyObject *c)
{
    PyObject *ab = PyUnicode_Concat(a, b);
    if (ab == NULL) {
        return NULL;
    }
    PyObject *result = PyUnicode_Concat(ab, c);
    Py_DECREF(ab);
    return result;
}

static PyObject *
escaper_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Escaper *e = (Escaper *)self;
    if (PyVectorcall_NARGS(nargsf) != 1 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0)) {
        return PyObject_Vectorcall(e->reference, args, nargsf, kwnames); /* its TypeError */
    }
    if (e->table == NULL && escaper_load(e) < 0) {
        return NULL;
    }
    State *st = module_state(e->module);
    PyObject *value = args[0], *text = NULL;
    if (PyUnicode_CheckExact(value)) {
        int done = escaper_text(e, value, &text);
        if (done < 0) {
            return NULL;
        }
        if (done) {
            return e->output ? text : new_text_steal(st, e->cls, text);
        }
    }
    else if (Py_TYPE(value) == e->cls) {
        if (e->markup) {
            return Py_NewRef(value);
        }
    }
    else if (PyLong_CheckExact(value) && (e->ints || e->int_prefix != NULL)) {
        int overflow;
        long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (number == -1 && PyErr_Occurred()) {
            return NULL;
        }
        if (e->ints && (overflow > 0 || (overflow == 0 && number >= 0))) {
            return Py_NewRef(value);
        }
        if (e->int_prefix != NULL && (text = PyObject_Str(value)) != NULL) {
            PyObject *out = concat3(e->int_prefix, text, e->int_suffix);
            Py_DECREF(text);
            return e->output ? out : new_text_steal(st, e->cls, out);
        }
        if (e->int_prefix != NULL) {
            return NULL;
        }
    }
    else if (e->constants != NULL && (value == Py_True || value == Py_False || value == Py_None)) {
        PyObject *out =
            PyTuple_GET_ITEM(e->constants, value == Py_True ? 0 : value == Py_False ? 1 : 2);
        return e->output ? Py_NewRef(out) : new_text(st, e->cls, out);
    }
    return PyObject_Vectorcall(e->reference, args, nargsf, NULL);
}

static int
escaper_traverse(PyObject *self, visitproc visit, void *arg)
{
    Escaper *e = (Escaper *)self;
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(e->module);
    Py_VISIT(e->cls);
    Py_VISIT(e->reference);
    Py_VISIT(e->plan);
    return 0;
}

static int
escaper_clear(PyObject *self)
{
    Escaper *e = (Escaper *)self;
    Py_CLEAR(e->module);
    Py_CLEAR(e->cls);
    Py_CLEAR(e->reference);
    Py_CLEAR(e->plan);
    Py_CLEAR(e->empty);
    Py_CLEAR(e->prefix);
    Py_CLEAR(e->suffix);
    Py_CLEAR(e->refused);
    Py_CLEAR(e->refusal);
    Py_CLEAR(e->allowed);
    Py_CLEAR(e->script);
    Py_CLEAR(e->int_prefix);
    Py_CLEAR(e->int_suffix);
    Py_CLEAR(e->constants);
    return 0;
}

static void
escaper_dealloc(PyObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    escaper_clear(self);
    PyMem_Free(((Escaper *)self)->table);
    type->tp_free(self);
    Py_DECREF(type);
}

static PyObject *
escaper_name(PyObject *self, void *Py_UNUSED(closure))
{
    return PyObject_GetAttrString(((Escaper *)self)->reference, "__name__");
}

static PyObject *
escaper_repr(PyObject *self)
{
    return PyUnicode_FromFormat("<contextual escaper %R>", ((Escaper *)self)->reference);
}

static PyMemberDef escaper_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(Escaper, vectorcall), READONLY, NULL},
    {"__wrapped__", T_OBJECT, offsetof(Escaper, reference), READONLY,
     PyDoc_STR("The reference escaper (Python): the definition, and the slow path.")},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef escaper_getset[] = {
    {"__name__", escaper_name, NULL, PyDoc_STR("The escaper's name."), NULL},
    {"__qualname__", escaper_name, NULL, PyDoc_STR("The escaper's name."), NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot escaper_slots[] = {
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_traverse, escaper_traverse},
    {Py_tp_clear, escaper_clear},
    {Py_tp_dealloc, escaper_dealloc},
    {Py_tp_repr, escaper_repr},
    {Py_tp_members, escaper_members},
    {Py_tp_getset, escaper_getset},
    {Py_tp_doc, (void *)PyDoc_STR("The escaper of one context; see contextual_escaper().")},
    {0, NULL},
};

static PyType_Spec escaper_spec = {
    .name = "ptl_wsgi._htmltext_c.ContextualEscaper",
    .basicsize = sizeof(Escaper),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
             Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = escaper_slots,
};

static PyObject *
mod_contextual_escaper(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 && nargs != 4) {
        PyErr_Format(PyExc_TypeError, "contextual_escaper() takes 3 or 4 arguments (%zd given)",
                     nargs);
        return NULL;
    }
    int output = nargs == 4 ? PyObject_IsTrue(args[3]) : 0;
    if (output < 0) {
        return NULL;
    }
    State *st = module_state(module);
    PyObject *cls = args[0], *reference = args[1], *plan = args[2];
    /* A plan only for the registered class, whose instances new_text() makes. */
    if (plan == Py_None || cls != (PyObject *)st->text_type) {
        return Py_NewRef(reference);
    }
    Escaper *e = (Escaper *)st->escaper_type->tp_alloc(st->escaper_type, 0);
    if (e == NULL) {
        return NULL;
    }
    e->vectorcall = escaper_vectorcall;
    e->module = Py_NewRef(module);
    e->cls = (PyTypeObject *)Py_NewRef(cls);
    e->reference = Py_NewRef(reference);
    e->plan = Py_NewRef(plan);
    e->output = (char)output;
    return (PyObject *)e;
}

/* -- module functions ------------------------------------------------------ */

static PyObject *
mod_register(PyObject *module, PyObject *cls)
{
    State *st = module_state(module);
    /* new_text() makes results as str.__new__(cls, s) does without its
       checks: they are made here, once. */
    PyObject *call[2] = {cls, st->empty};
    PyObject *probe = PyObject_Vectorcall(st->str_new, call, 2, NULL);
    if (probe == NULL) {
        return NULL;
    }
    Py_DECREF(probe);
    Py_SETREF(st->text_type, (PyTypeObject *)Py_NewRef(cls));
    Py_RETURN_NONE;
}

static PyObject *
mod_register_nonced(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyType_Check(args[0]) ||
        !PyType_IsSubtype((PyTypeObject *)args[0], module_state(module)->text_type) ||
        !PyList_CheckExact(args[2]) || PyList_GET_SIZE(args[2]) != 1) {
        PyErr_SetString(PyExc_TypeError,
                        "register_nonced() takes a subclass of the registered class, a join "
                        "and the one-item list that says whether a nonce scope was entered");
        return NULL;
    }
    State *st = module_state(module);
    Py_XSETREF(st->nonced_type, (PyTypeObject *)Py_NewRef(args[0]));
    Py_XSETREF(st->nonced_join, Py_NewRef(args[1]));
    Py_XSETREF(st->nonce_used, Py_NewRef(args[2]));
    Py_RETURN_NONE;
}

static PyObject *
mod_escape_str(PyObject *Py_UNUSED(module), PyObject *s)
{
    if (!PyUnicode_Check(s)) {
        PyErr_Format(PyExc_TypeError, "escape_str() argument must be str, not %.200s",
                     Py_TYPE(s)->tp_name);
        return NULL;
    }
    return escape_text(s);
}

static PyObject *
mod_markup_of(PyObject *module, PyObject *value)
{
    return markup_of_exact(module_state(module), value);
}

static PyObject *
mod_stringify(PyObject *Py_UNUSED(module), PyObject *value)
{
    return plain_text(value);
}

static PyObject *
mod_htmlescape(PyObject *module, PyObject *value)
{
    State *st = module_state(module);
    if (is_registered_text(st, value) || is_nonced(st, value)) {
        return Py_NewRef(value);
    }
    return new_text_steal(st, st->text_type, markup_text(st, value));
}

/* html_join() of a list or tuple that holds no markup carrying nonce slots. */
static PyObject *
html_join_parts(State *st, PyObject *parts)
{
    /* What a template with a single output value joins: that value, when it
       is already an instance of the registered class, is the result (str
       instances are immutable: a copy could not differ). */
    if ((PyTuple_CheckExact(parts) || PyList_CheckExact(parts)) &&
        PySequence_Fast_GET_SIZE(parts) == 1 &&
        is_registered_text(st, PySequence_Fast_GET_ITEM(parts, 0))) {
        return Py_NewRef(PySequence_Fast_GET_ITEM(parts, 0));
    }
    Pieces pieces;
    if (collect(st, &pieces, parts, JOIN_MARKUP, 1) < 0) {
        return NULL;
    }
    /* The same for a single piece left once None is skipped. */
    if (pieces.len == 1 && is_registered_text(st, pieces.items[0].obj)) {
        PyObject *result = pieces.items[0].obj;
        pieces.len = 0;
        pieces_clear(&pieces);
        return result;
    }
    return new_text_steal(st, st->text_type, pieces_concat(&pieces));
}

/* html_join() and template_join(): the carrier's join (escaping.nonce) follows the
   context through the parts before markup carrying nonce slots, but for a compiled
   template's output (follow 0), whose values outside text the compiler made plain. */
static PyObject *
join_parts(PyObject *module, PyObject *parts, int follow)
{
    State *st = module_state(module);
    int nonced;
    PyObject *seq = parts_seq(st, parts, &nonced);
    if (seq == NULL) {
        return NULL;
    }
    if (!nonced) {
        PyObject *joined = html_join_parts(st, seq);
        Py_DECREF(seq);
        return joined;
    }
    /* Where the carrier markup is, for its join (which joins the runs between here). */
    PyObject *carried = PyList_New(0);
    PyObject *joined = NULL;
    if (carried != NULL) {
        Py_ssize_t i, n = PySequence_Fast_GET_SIZE(seq);
        for (i = 0; i < n; i++) {
            if (is_nonced(st, PySequence_Fast_GET_ITEM(seq, i))) {
                PyObject *index = PyLong_FromSsize_t(i);
                int failed = index == NULL || PyList_Append(carried, index) < 0;
                Py_XDECREF(index);
                if (failed) {
                    break;
                }
            }
        }
        if (i == n) {
            joined = PyObject_CallFunctionObjArgs(st->nonced_join, seq, Py_None,
                                                  follow ? Py_True : Py_False, carried, NULL);
        }
        Py_DECREF(carried);
    }
    Py_DECREF(seq);
    return joined;
}

static PyObject *
mod_html_join(PyObject *module, PyObject *parts)
{
    return join_parts(module, parts, 1);
}

static PyObject *
mod_template_join(PyObject *module, PyObject *parts)
{
    return join_parts(module, parts, 0);
}

static PyObject *
mod_plain_join(PyObject *module, PyObject *parts)
{
    Pieces pieces;
    if (collect(module_state(module), &pieces, parts, JOIN_PLAIN, 1) < 0) {
        return NULL;
    }
    return pieces_concat(&pieces);
}

static PyObject *
mod_format_field(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "format_field() takes exactly 3 arguments (%zd given)",
                     nargs);
        return NULL;
    }
    return format_field_impl(module_state(module), args[0], args[1], args[2]);
}

static PyObject *
mod_format_mod(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "format_mod() takes exactly 2 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *format_mod = twin_attr(module_state(module), "format_mod");
    if (format_mod == NULL) {
        return NULL;
    }
    PyObject *result = PyObject_Vectorcall(format_mod, args, 2, NULL);
    Py_DECREF(format_mod);
    return result;
}

/* Output values of compiled templates' fast path.  A str, int, float or
   htmltext goes to the output list as it is (the final join escapes it, and
   its text cannot change before then); anything else is formatted now, by
   the rule of the construct the value came from. */
static inline int
is_simple_output(State *st, PyObject *v)
{
    return PyUnicode_CheckExact(v) || PyLong_CheckExact(v) || PyFloat_CheckExact(v) ||
           is_registered_text(st, v) || is_nonced(st, v);
}

/* A simple value output outside text (an attribute value, RCDATA): markup that
   carries nonce slots is output as plain markup, so that no nonce goes where a
   value may send it (escaping.nonce). */
static PyObject *
simple_outside_text(State *st, PyObject *value)
{
    if (is_nonced(st, value)) {
        return new_text_steal(st, st->text_type, PyUnicode_FromObject(value));
    }
    return Py_NewRef(value);
}

static PyObject *
field_output_impl(State *st, PyObject *value, int in_text)
{
    if (is_simple_output(st, value)) {
        return in_text ? Py_NewRef(value) : simple_outside_text(st, value);
    }
    return new_text_steal(st, st->text_type, field_markup(st, value, st->empty));
}

static PyObject *
mod_field_output(PyObject *module, PyObject *value)
{
    return field_output_impl(module_state(module), value, 1);
}

static PyObject *
mod_field_outside_text(PyObject *module, PyObject *value)
{
    return field_output_impl(module_state(module), value, 0);
}

static PyObject *
mod_outside_text(PyObject *module, PyObject *value)
{
    return simple_outside_text(module_state(module), value);
}

static PyObject *
percent_output_impl(State *st, PyObject *const *args, Py_ssize_t nargs, int in_text)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "percent_output() takes exactly 2 arguments (%zd given)",
                     nargs);
        return NULL;
    }
    PyObject *value = args[0], *fmt = args[1];
    if (is_simple_output(st, value)) {
        return in_text ? Py_NewRef(value) : simple_outside_text(st, value);
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
        if (is_simple_output(st, value)) {
            return in_text ? Py_NewRef(value) : simple_outside_text(st, value);
        }
    }
    return new_text_steal(st, st->text_type, markup_text(st, value));
}

static PyObject *
mod_percent_output(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    return percent_output_impl(module_state(module), args, nargs, 1);
}

static PyObject *
mod_percent_outside_text(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    return percent_output_impl(module_state(module), args, nargs, 0);
}

/* first_of(a, b, ...) is a: the compiled form of "% (a, b)" evaluates every
   argument before formatting the first without a tuple (measured: a tuple,
   its subscripts and its free were about 450 instructions per statement). */
static PyObject *
mod_first_of(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError, "first_of() takes at least 1 argument");
        return NULL;
    }
    return Py_NewRef(args[0]);
}

static PyObject *mod_field_output(PyObject *module, PyObject *value);
static PyObject *mod_percent_output(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
static PyObject *mod_field_outside_text(PyObject *module, PyObject *value);
static PyObject *mod_outside_text(PyObject *module, PyObject *value);
static PyObject *mod_percent_outside_text(PyObject *module, PyObject *const *args,
                                          Py_ssize_t nargs);

/* Values a fused loop reads from an item (its attributes and items) are held
   in slots 1 to LOOP_SLOTS - 1 while the item is output; slot 0 is the item. */
#define LOOP_SLOTS 32

/* Whether a simple value may be appended without calling func with n - 1
   extra arguments: the fast path's own outputs (called as the compiler calls
   them) return a simple value as it is. */
static inline int
output_as_is(State *st, PyObject *func, Py_ssize_t n, PyObject *value)
{
    if (!is_simple_output(st, value) || !PyCFunction_Check(func)) {
        return 0;
    }
    PyCFunction called = PyCFunction_GET_FUNCTION(func);
    if ((n == 1 && called == (PyCFunction)mod_field_output) ||
        (n == 2 && called == CFUNC(mod_percent_output))) {
        return 1;
    }
    /* Outside text, markup carrying nonce slots is made plain: the call does it. */
    return !is_nonced(st, value) &&
           ((n == 1 && (called == (PyCFunction)mod_field_outside_text ||
                        called == (PyCFunction)mod_outside_text)) ||
            (n == 2 && called == CFUNC(mod_percent_outside_text)));
}

/* Appends func(value, *part[first + 1:]) to out (value itself where output_as_is). */
static int
loop_call(State *st, PyObject *out, PyObject *part, Py_ssize_t first, PyObject *value)
{
    PyObject *func = PyTuple_GET_ITEM(part, first);
    Py_ssize_t n = PyTuple_GET_SIZE(part) - first;
    if (output_as_is(st, func, n, value)) {
        return PyList_Append(out, value);
    }
    PyObject *call_args[4] = {value};
    for (Py_ssize_t k = 1; k < n; k++) {
        call_args[k] = PyTuple_GET_ITEM(part, first + k);
    }
    PyObject *result = PyObject_Vectorcall(func, call_args, (size_t)n, NULL);
    int failed = result == NULL ? -1 : PyList_Append(out, result);
    Py_XDECREF(result);
    return failed;
}

/* The value that path (attribute names, exact str, and item keys) reads from
   item, as item.name[key]... reads it: a new reference, NULL on an error. */
static PyObject *
loop_read(PyObject *item, PyObject *path)
{
    PyObject *value = Py_NewRef(item);
    for (Py_ssize_t i = 0; value != NULL && i < PyTuple_GET_SIZE(path); i++) {
        PyObject *step = PyTuple_GET_ITEM(path, i);
        PyObject *next = PyUnicode_CheckExact(step) ? PyObject_GetAttr(value, step)
                                                    : PyObject_GetItem(value, step);
        Py_SETREF(value, next);
    }
    return value;
}

/* A slot part (k, ...) of a pattern: see mod_loop_output. */
static int
loop_slot_part(State *st, PyObject *out, PyObject *part, PyObject **slots, Py_ssize_t *used)
{
    Py_ssize_t n = PyTuple_GET_SIZE(part);
    Py_ssize_t k = PyLong_AsSsize_t(PyTuple_GET_ITEM(part, 0));
    if (k < 1 || k >= LOOP_SLOTS || n > 5) {
        if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_TypeError, "loop_output(): a bad slot part");
        }
        return -1;
    }
    if (n == 2 && PyTuple_CheckExact(PyTuple_GET_ITEM(part, 1))) {
        PyObject *path = PyTuple_GET_ITEM(part, 1);
        if (PyTuple_GET_SIZE(path) == 0) {
            PyErr_SetString(PyExc_TypeError, "loop_output(): a bad slot part");
            return -1;
        }
        PyObject *value = loop_read(slots[0], path);
        if (value == NULL) {
            return -1;
        }
        Py_XSETREF(slots[k], value);
        if (k >= *used) {
            *used = k + 1;
        }
        return 0;
    }
    if (slots[k] == NULL) {
        PyErr_SetString(PyExc_TypeError, "loop_output(): a slot output before it is read");
        return -1;
    }
    if (n == 1) {
        return PyList_Append(out, slots[k]);
    }
    return loop_call(st, out, part, 1, slots[k]);
}

/* Appends pattern[i] for one item: see mod_loop_output. */
static int
loop_part(State *st, PyObject *out, PyObject *part, PyObject **slots, Py_ssize_t *used)
{
    if (part == Py_None) {
        return PyList_Append(out, slots[0]);
    }
    if (!PyTuple_CheckExact(part) || PyTuple_GET_SIZE(part) < 1) {
        return PyList_Append(out, part);
    }
    if (PyLong_CheckExact(PyTuple_GET_ITEM(part, 0))) {
        return loop_slot_part(st, out, part, slots, used);
    }
    if (PyTuple_GET_SIZE(part) > 4) {
        return PyList_Append(out, part);
    }
    return loop_call(st, out, part, 0, slots[0]);
}

/* A fused output loop of a compiled template: for each item of the iterable,
   appends pattern's parts to the list out, None standing for the item and a
   tuple (f, *extra) for f(item, *extra).  A part (k, path), k an int from 1
   to LOOP_SLOTS - 1, reads a value from the item into slot k, each step of
   the path an attribute's name (an exact str) or an item's key; (k,) then
   stands for that value and (k, f, *extra) for f(value, *extra).  The reads
   and calls are made in the pattern's order, as the loop's body makes them.
   With a joint (the pattern's last part and first part, both text, as one),
   one joint is appended between items instead of the two.  Measured
   (callgrind, bigtable): the interpreter's loop, its tuple and extend() were
   a third of a render, and the joint saves a third of the pieces the final
   join goes through. */
static PyObject *
mod_loop_output(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 3 || nargs > 4 || !PyList_CheckExact(args[0]) || !PyTuple_Check(args[2]) ||
        (nargs == 4 && args[3] != Py_None && PyTuple_GET_SIZE(args[2]) < 2)) {
        PyErr_SetString(PyExc_TypeError,
                        "loop_output() takes a list, an iterable, a tuple and an optional joint");
        return NULL;
    }
    State *st = module_state(module);
    PyObject *out = args[0], *pattern = args[2], *item;
    PyObject *joint = nargs == 4 && args[3] != Py_None ? args[3] : NULL;
    Py_ssize_t first = joint != NULL, stop = PyTuple_GET_SIZE(pattern) - first;
    PyObject *slots[LOOP_SLOTS] = {NULL};
    Py_ssize_t used = 1;
    int started = 0;
    size_t count = 0;
    PyObject *it = PyObject_GetIter(args[1]);
    if (it == NULL) {
        return NULL;
    }
    while ((item = PyIter_Next(it)) != NULL) {
        /* As the interpreter's loop would: signal handlers (Ctrl-C, a timeout's
           alarm) run during a long loop over a C iterator too. */
        int failed = (++count % 64 == 0 && PyErr_CheckSignals() < 0) ||
                     (joint != NULL &&
                      PyList_Append(out, started ? joint : PyTuple_GET_ITEM(pattern, 0)) < 0);
        started = 1;
        slots[0] = item;
        for (Py_ssize_t i = first; !failed && i < stop; i++) {
            failed = loop_part(st, out, PyTuple_GET_ITEM(pattern, i), slots, &used) < 0;
        }
        for (Py_ssize_t k = 1; k < used; k++) {
            Py_CLEAR(slots[k]); /* an item's values are not the next item's */
        }
        Py_DECREF(item);
        if (failed) {
            Py_DECREF(it);
            return NULL;
        }
    }
    Py_DECREF(it);
    if (PyErr_Occurred() ||
        (started && joint != NULL && PyList_Append(out, PyTuple_GET_ITEM(pattern, stop)) < 0)) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* contextual_htmlformat()'s own formatting.  The escaping engine marks, in
   st->text_only, the strings of t-strings whose every value lands in text or a
   quoted plain attribute (planner.plan(); never one with a CSP nonce); for those
   the twin does what the engine's contextual_format() does there, nested
   t-strings and items included, into one Pieces for the whole output.  A nested
   t-string whose strings are not marked is formatted by the fallback (the
   engine), alone: generators already consumed are not started again. */
#ifdef HAVE_TEMPLATES
static int push_template(State *st, Pieces *p, PyObject *template, int join);

/* Whether spec is "" (1), not (0), or -1 on an error. */
static inline int
spec_is_empty(PyObject *spec)
{
    if (PyUnicode_CheckExact(spec)) {
        return PyUnicode_GET_LENGTH(spec) == 0;
    }
    return PyObject_Not(spec);
}

/* What planner.is_items() says: exactly a list, a tuple or a generator. */
static inline int
is_items(PyObject *value)
{
    return PyList_CheckExact(value) || PyTuple_CheckExact(value) || PyGen_CheckExact(value);
}

/* format_field(value, -1, "") pushed: markup kept, anything else escaped. */
static int
push_value(State *st, Pieces *p, PyObject *value)
{
    /* For these format(value, "") is str(value), which pieces_push_markup() escapes
       (a 1-byte str while the result is written, an int as its digits). */
    if (PyUnicode_CheckExact(value) || PyLong_CheckExact(value) || PyFloat_CheckExact(value) ||
        is_registered_text(st, value)) {
        return pieces_push_markup(st, p, value);
    }
    return pieces_push(p, field_markup(st, value, st->empty));
}

/* A nested t-string's markup pushed, with `spec` (NULL: none) applied to it as
   to any markup; recursion is bounded as Python's own is. */
static int
push_nested(State *st, Pieces *p, PyObject *template, PyObject *spec)
{
    if (Py_EnterRecursiveCall(" while formatting a t-string")) {
        return -1;
    }
    int status;
    if (spec == NULL) {
        status = push_template(st, p, template, 1);
    }
    else {
        Pieces inner;
        pieces_init(&inner);
        status = push_template(st, &inner, template, 1);
        if (status < 0) {
            pieces_clear(&inner);
        }
        else {
            PyObject *text = pieces_concat(&inner);
            PyObject *formatted = text == NULL ? NULL : format_markup(st, text, spec);
            Py_XDECREF(text);
            status = pieces_push(p, formatted);
        }
    }
    Py_LeaveRecursiveCall();
    return status;
}

/* Items in text: each item as a lone value there (a nested t-string by its own
   contexts, markup kept, anything else escaped), nested items flattened. */
static int
push_items(State *st, Pieces *p, PyObject *items)
{
    if (Py_EnterRecursiveCall(" while joining a t-string's items")) {
        return -1;
    }
    Items it;
    PyObject *item;
    int status = items_init(&it, items);
    while (status == 0 && (status = items_next(&it, &item)) > 0) {
        status = is_items(item)          ? push_items(st, p, item)
                 : is_template(st, item) ? push_nested(st, p, item, NULL)
                                         : push_value(st, p, item);
        Py_DECREF(item);
    }
    items_clear(&it);
    Py_LeaveRecursiveCall();
    return status < 0 ? -1 : 0;
}

/* One interpolation of a text-only t-string, as contextual_format() formats it;
   items are joined if `join`, else one value (contextual_fstring()). */
static int
push_interpolation(State *st, Pieces *p, PyObject *interpolation, int join)
{
    PyObject *value = INTERPOLATION_FIELD(st, interpolation, value);
    PyObject *conversion = value == NULL ? NULL : INTERPOLATION_FIELD(st, interpolation, conversion);
    PyObject *spec = conversion == NULL ? NULL : INTERPOLATION_FIELD(st, interpolation, format_spec);
    int status = -1;
    if (spec == NULL) {
        goto done;
    }
    if (conversion != Py_None) {
        status = pieces_push(p, converted_markup(value, conversion, spec));
        goto done;
    }
    int empty = spec_is_empty(spec);
    if (empty < 0) {
        goto done;
    }
    if (empty && join && is_items(value)) {
        status = push_items(st, p, value);
    }
    else if (is_template(st, value)) {
        status = push_nested(st, p, value, empty ? NULL : spec);
    }
    else if (empty) {
        status = push_value(st, p, value);
    }
    else {
        status = pieces_push(p, field_markup(st, value, spec));
    }

done:
    Py_XDECREF(value);
    Py_XDECREF(conversion);
    Py_XDECREF(spec);
    return status;
}

/* The fallback's markup of a t-string the twin does not format (pushed as it is:
   an htmltext is read as its characters). */
static int
push_fallback(State *st, Pieces *p, PyObject *template)
{
    if (st->format_fallback == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "contextual_htmlformat(): set_htmlformat() first");
        return -1;
    }
    /* Held: the call may run set_htmlformat(), which drops the state's reference. */
    PyObject *fallback = Py_NewRef(st->format_fallback);
    PyObject *result = PyObject_CallOneArg(fallback, template);
    Py_DECREF(fallback);
    if (result != NULL && !PyUnicode_Check(result)) {
        PyErr_Format(PyExc_TypeError, "htmlformat()'s fallback returned %.200s, not str",
                     Py_TYPE(result)->tp_name);
        Py_CLEAR(result);
    }
    return pieces_push(p, result);
}

/* 1 if the engine marked `strings` as a text-only t-string's, 0 if not, -1 on error. */
static inline int
marked_text_only(State *st, PyObject *strings)
{
    /* The dict is held: a str subclass's __hash__ or __eq__ in the strings may run
       set_htmlformat(); the flag is only compared. */
    PyObject *text_only = Py_NewRef(st->text_only);
    PyObject *flag = PyDict_GetItemWithError(text_only, strings); /* borrowed */
    Py_DECREF(text_only);
    return flag == Py_True ? 1 : PyErr_Occurred() ? -1 : 0;
}

/* A t-string's markup pushed: by the twin if its strings are marked text-only,
   else by the fallback; its own items joined if `join`. */
static int
push_template(State *st, Pieces *p, PyObject *template, int join)
{
    PyObject *strings = TEMPLATE_FIELD(st, template, strings);
    if (strings == NULL) {
        return -1;
    }
    int marked = marked_text_only(st, strings);
    if (marked <= 0) {
        Py_DECREF(strings);
        return marked < 0 ? -1 : push_fallback(st, p, template);
    }
    PyObject *interpolations = TEMPLATE_FIELD(st, template, interpolations);
    int status = -1;
    if (interpolations == NULL) {
        goto done;
    }
    /* A Template's own invariant: n interpolations between n + 1 strings. */
    if (!PyTuple_CheckExact(strings) || !PyTuple_CheckExact(interpolations) ||
        PyTuple_GET_SIZE(strings) != PyTuple_GET_SIZE(interpolations) + 1) {
        PyErr_SetString(PyExc_TypeError, "htmlformat(): malformed Template");
        goto done;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(strings); i++) {
        if (i > 0 &&
            push_interpolation(st, p, PyTuple_GET_ITEM(interpolations, i - 1), join) < 0) {
            goto done;
        }
        PyObject *literal = PyTuple_GET_ITEM(strings, i);
        if (PyUnicode_CheckExact(literal) && PyUnicode_GET_LENGTH(literal) == 0) {
            continue;
        }
        if (pieces_push(p, literal_part(literal)) < 0) {
            goto done;
        }
    }
    status = 0;

done:
    Py_DECREF(strings);
    Py_XDECREF(interpolations);
    return status;
}
#endif

/* htmlformat() of ptl_wsgi.html (join 1) and html_fstring() (join 0: the
   t-string's own items are one value each, as in an [html] f-string): a t-string
   whose strings the escaping engine marked as text-only is formatted here
   (push_template()), nested t-strings and items included; anything else by the
   fallback, the engine's contextual formatting.  Measured (benchmarks/tstrings.py,
   3.14): the same checks in Python took 3x the time of the formatting. */
static PyObject *
contextual_format(State *st, PyObject *template, PyObject *fallback, int join)
{
    if (fallback == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        join ? "contextual_htmlformat(): set_htmlformat() first"
                             : "contextual_fstring(): set_htmlformat() with its third argument first");
        return NULL;
    }
    /* Held from here: the strings' __hash__ (a str subclass's), the formatting and the
       fallback itself may run set_htmlformat(), which drops the state's reference. */
    Py_INCREF(fallback);
    PyObject *result = NULL;
#ifdef HAVE_TEMPLATES
    PyObject *markup;
    int made = marked_markup(st, template, join, &markup);
    if (made != 0) {
        result = made < 0 ? NULL : new_text_steal(st, st->text_type, markup);
        Py_DECREF(fallback);
        return result;
    }
#else
    (void)st;
    (void)join;
#endif
    result = PyObject_CallOneArg(fallback, template);
    Py_DECREF(fallback);
    return result;
}

#ifdef HAVE_TEMPLATES
/* Whether value (a t-string's value) is or holds, in a list, a tuple or a nested
   t-string, markup that carries nonce slots (escaping.nonce.holds_nonced): 1, 0, or
   -1 on an error.  Generators are not looked into (their markup keeps no slots). */
static int
holds_nonced(State *st, PyObject *value, int depth)
{
    if (st->nonced_type == NULL || depth > 32) {
        return 0;
    }
    if (is_nonced(st, value)) {
        return 1;
    }
    int found = 0;
    if (PyList_CheckExact(value) || PyTuple_CheckExact(value)) {
        for (Py_ssize_t i = 0; found == 0 && i < PySequence_Fast_GET_SIZE(value); i++) {
            PyObject *item = Py_NewRef(PySequence_Fast_GET_ITEM(value, i));
            found = holds_nonced(st, item, depth + 1);
            Py_DECREF(item);
        }
        return found;
    }
    if (!is_template(st, value)) {
        return 0;
    }
    PyObject *interpolations = TEMPLATE_FIELD(st, value, interpolations);
    if (interpolations == NULL) {
        return -1;
    }
    if (PyTuple_CheckExact(interpolations)) {
        for (Py_ssize_t i = 0; found == 0 && i < PyTuple_GET_SIZE(interpolations); i++) {
            PyObject *held = INTERPOLATION_FIELD(st, PyTuple_GET_ITEM(interpolations, i), value);
            found = held == NULL ? -1 : holds_nonced(st, held, depth + 1);
            Py_XDECREF(held);
        }
    }
    Py_DECREF(interpolations);
    return found;
}

/* A t-string's markup text as an exact str in *markup, if it is a Template whose
   strings the engine marked as text-only (1); 0 if not (nothing made), -1 on error. */
static int
marked_markup(State *st, PyObject *template, int join, PyObject **markup)
{
    *markup = NULL;
    if (!is_template(st, template)) {
        return 0;
    }
    PyObject *strings = TEMPLATE_FIELD(st, template, strings);
    int marked = strings == NULL ? -1 : marked_text_only(st, strings);
    Py_XDECREF(strings);
    if (marked <= 0) {
        return marked;
    }
    /* Markup that carries nonce slots is formatted by the engine (the fallback), which
       keeps the slots of what lands in text; only once a nonce scope was entered. */
    if (st->nonce_used != NULL && PyList_GET_ITEM(st->nonce_used, 0) == Py_True) {
        int nonced = holds_nonced(st, template, 0);
        if (nonced != 0) {
            return nonced < 0 ? -1 : 0;
        }
    }
    Pieces pieces;
    pieces_init(&pieces);
    if (push_template(st, &pieces, template, join) < 0) {
        pieces_clear(&pieces);
        return -1;
    }
    *markup = pieces_concat(&pieces);
    return *markup == NULL ? -1 : 1;
}
#endif

static PyObject *
mod_contextual_htmlformat(PyObject *module, PyObject *template)
{
    State *st = module_state(module);
    return contextual_format(st, template, st->format_fallback, 1);
}

static PyObject *
mod_contextual_fstring(PyObject *module, PyObject *template)
{
    State *st = module_state(module);
    return contextual_format(st, template, st->fstring_fallback, 0);
}

static PyObject *
mod_set_htmlformat(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 2 || nargs > 3 || !PyDict_CheckExact(args[0]) || !PyCallable_Check(args[1]) ||
        (nargs == 3 && args[2] != Py_None && !PyCallable_Check(args[2]))) {
        PyErr_SetString(PyExc_TypeError,
                        "set_htmlformat() takes a dict and a callable (and another callable)");
        return NULL;
    }
    State *st = module_state(module);
    Py_XSETREF(st->text_only, Py_NewRef(args[0]));
    Py_XSETREF(st->format_fallback, Py_NewRef(args[1]));
    Py_XSETREF(st->fstring_fallback,
               nargs == 3 && args[2] != Py_None ? Py_NewRef(args[2]) : NULL);
    Py_RETURN_NONE;
}

/* Before 3.14 nothing is a Template: htmlformat() only refuses its argument. */
static PyObject *
mod_htmlformat(PyObject *module, PyObject *template)
{
    State *st = module_state(module);
#ifdef HAVE_TEMPLATES
    return new_text_steal(st, st->text_type, template_markup(st, template));
#else
    (void)st;
    return not_a_template(template);
#endif
}

static PyMethodDef module_methods[] = {
    {"register", mod_register, METH_O,
     PyDoc_STR("Tell this twin which class its functions must return.")},
    {"register_nonced", CFUNC(mod_register_nonced), METH_FASTCALL,
     PyDoc_STR("register_nonced(cls, join, used): the markup that carries CSP nonce slots.")},
    {"escape_str", mod_escape_str, METH_O,
     PyDoc_STR("Escape & < > \" ' in s; return s itself when nothing needs it.")},
    {"markup_of", mod_markup_of, METH_O,
     PyDoc_STR("The markup text for value: its __html__() if it has one, else escaped str().")},
    {"stringify", mod_stringify, METH_O,
     PyDoc_STR("Return value as a plain str (str(), without escaping).")},
    {"htmlescape", mod_htmlescape, METH_O,
     PyDoc_STR("Return value as htmltext: escaped, unless it has __html__.")},
    {"template_join", mod_template_join, METH_O,
     PyDoc_STR("html_join() of a compiled template's output (see the Python twin).")},
    {"html_join", mod_html_join, METH_O,
     PyDoc_STR("Join template output as htmltext, escaping untrusted parts, skipping None.")},
    {"plain_join", mod_plain_join, METH_O,
     PyDoc_STR("Join template output as plain text, skipping None.")},
    {"format_field", CFUNC(mod_format_field), METH_FASTCALL,
     PyDoc_STR("Markup for one f-string field: convert, apply spec, then escape.")},
    {"format_mod", CFUNC(mod_format_mod), METH_FASTCALL,
     PyDoc_STR("fmt % arg with every conversion escaped; returns markup as str.")},
    {"field_output", mod_field_output, METH_O,
     PyDoc_STR("An f-string or str.format field's output: value itself if it is a str, int, "
               "float or htmltext, else format_field(value, -1, '') as htmltext.")},
    {"percent_output", CFUNC(mod_percent_output), METH_FASTCALL,
     PyDoc_STR("A %s field's output: value itself if it is a str, int, float or htmltext, "
               "else its markup as htmltext; a tuple is fmt's values unless fmt is None.")},
    {"outside_text", mod_outside_text, METH_O,
     PyDoc_STR("A value output outside text: markup carrying nonce slots made plain.")},
    {"field_outside_text", mod_field_outside_text, METH_O,
     PyDoc_STR("field_output() outside text: markup carrying nonce slots made plain.")},
    {"percent_outside_text", CFUNC(mod_percent_outside_text), METH_FASTCALL,
     PyDoc_STR("percent_output() outside text: markup carrying nonce slots made plain.")},
    {"first_of", CFUNC(mod_first_of), METH_FASTCALL,
     PyDoc_STR("Return the first argument (the others are evaluated by the call).")},
    {"loop_output", CFUNC(mod_loop_output), METH_FASTCALL,
     PyDoc_STR("Append pattern to the list out for each item of iterable: None is the item, "
               "(f, *extra) is f(item, *extra), anything else itself; a joint replaces the "
               "pattern's last and first parts between items.")},
    {"contextual_htmlformat", mod_contextual_htmlformat, METH_O,
     PyDoc_STR("A t-string as htmltext: one whose strings set_htmlformat()'s dict marks as "
               "text-only formatted here, nested t-strings and items included; any other by "
               "the fallback.")},
    {"contextual_fstring", mod_contextual_fstring, METH_O,
     PyDoc_STR("contextual_htmlformat() with the t-string's own items one value each, as in an "
               "[html] f-string; any t-string not marked by the third fallback.")},
    {"set_htmlformat", CFUNC(mod_set_htmlformat), METH_FASTCALL,
     PyDoc_STR("set_htmlformat(text_only, fallback[, fstring_fallback]): the dict of text-only "
               "strings and the formatting of every other t-string, for contextual_htmlformat() "
               "(and contextual_fstring()).")},
    {"contextual_escaper", CFUNC(mod_contextual_escaper), METH_FASTCALL,
     PyDoc_STR("contextual_escaper(cls, reference, plan, output=False): the escaper of one "
               "context, answering common values from plan() and calling reference for the "
               "rest (with output, a str from plan is returned for the join to escape); "
               "reference itself without a plan or for a class not registered.")},
    {"htmlformat", mod_htmlformat, METH_O,
     PyDoc_STR("A t-string as htmltext: literal parts trusted, interpolations converted, "
               "formatted and escaped; nested t-strings and markup kept.")},
    {NULL, NULL, 0, NULL},
};

/* -- module state and init ------------------------------------------------- */

static int
module_traverse(PyObject *module, visitproc visit, void *arg)
{
    State *st = module_state(module);
    Py_VISIT(st->base_type);
    Py_VISIT(st->text_type);
    Py_VISIT(st->nonced_type);
    Py_VISIT(st->nonced_join);
    Py_VISIT(st->nonce_used);
    Py_VISIT(st->str_new);
    Py_VISIT(st->twin);
    Py_VISIT(st->escaper_type);
    Py_VISIT(st->text_only);
    Py_VISIT(st->format_fallback);
    Py_VISIT(st->fstring_fallback);
#ifdef HAVE_TEMPLATES
    Py_VISIT(st->template_type);
    Py_VISIT(st->interpolation_type);
#endif
    return 0;
}

static int
module_clear(PyObject *module)
{
    State *st = module_state(module);
    Py_CLEAR(st->base_type);
    Py_CLEAR(st->text_type);
    Py_CLEAR(st->nonced_type);
    Py_CLEAR(st->nonced_join);
    Py_CLEAR(st->nonce_used);
    Py_CLEAR(st->str_new);
    Py_CLEAR(st->new_args);
    Py_CLEAR(st->empty);
    Py_CLEAR(st->s_html);
    Py_CLEAR(st->s_html_format);
    Py_CLEAR(st->twin);
    Py_CLEAR(st->escaper_type);
    Py_CLEAR(st->text_only);
    Py_CLEAR(st->format_fallback);
    Py_CLEAR(st->fstring_fallback);
#ifdef HAVE_TEMPLATES
    Py_CLEAR(st->template_type);
    Py_CLEAR(st->interpolation_type);
    Py_CLEAR(st->s_strings);
    Py_CLEAR(st->s_interpolations);
    Py_CLEAR(st->s_value);
    Py_CLEAR(st->s_conversion);
    Py_CLEAR(st->s_format_spec);
#endif
    return 0;
}

static void
module_free(void *module)
{
    module_clear((PyObject *)module);
}

/* The tp_new of Python classes, which calls the type's own __new__: HtmlTextBase
   takes it (see text_new), borrowed from a throwaway class with a __new__
   (None: str.__new__ itself would give the class str's tp_new). */
static void *
python_class_new(void)
{
    PyObject *probe = PyObject_CallFunction((PyObject *)&PyType_Type, "s(O){sO}", "probe",
                                            (PyObject *)&PyUnicode_Type, "__new__", Py_None);
    if (probe == NULL) {
        return NULL;
    }
    void *tp_new = PyType_GetSlot((PyTypeObject *)probe, Py_tp_new);
    Py_DECREF(probe);
    return tp_new;
}

static int
intern(PyObject **slot, const char *text)
{
    *slot = PyUnicode_InternFromString(text);
    return *slot == NULL ? -1 : 0;
}

#ifdef HAVE_TEMPLATES
/* The offset of `type`'s field `name` when the type declares it as a read-only
   object member of its own (string.templatelib's types do, in 3.14), else 0: the
   field is then read by getattr.  -1 on an error. */
static Py_ssize_t
member_offset(PyObject *type, PyObject *name)
{
    PyObject *descr = PyObject_GetAttr(type, name);
    if (descr == NULL) {
        return -1;
    }
    Py_ssize_t offset = 0;
    if (Py_IS_TYPE(descr, &PyMemberDescr_Type) &&
        (PyObject *)((PyMemberDescrObject *)descr)->d_common.d_type == type) {
        PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
        if (member->type == Py_T_OBJECT_EX &&
            (member->flags & Py_READONLY) && member->offset >= (Py_ssize_t)sizeof(PyObject) &&
            member->offset <= ((PyTypeObject *)type)->tp_basicsize - (Py_ssize_t)sizeof(PyObject *)) {
            offset = member->offset;
        }
    }
    Py_DECREF(descr);
    return offset;
}
#endif

static int
module_exec(PyObject *module)
{
    State *st = module_state(module);
    PyObject *str_type = (PyObject *)&PyUnicode_Type;

    st->text_type = (PyTypeObject *)Py_NewRef(str_type);
    st->str_tp_new = (newfunc)PyType_GetSlot(&PyUnicode_Type, Py_tp_new);
    if ((st->new_args = PyTuple_New(1)) == NULL) {
        return -1;
    }
    PyObject_GC_UnTrack(st->new_args);
    if ((st->str_new = PyObject_GetAttrString(str_type, "__new__")) == NULL ||
        (st->empty = PyUnicode_New(0, 0)) == NULL || intern(&st->s_html, "__html__") < 0 ||
        intern(&st->s_html_format, "__html_format__") < 0) {
        return -1;
    }
    void *tp_new = python_class_new();
    if (tp_new == NULL) {
        return -1;
    }
    /* The spec's slots with tp_new added, in this call's own copy. */
    PyType_Slot slots[Py_ARRAY_LENGTH(text_slots) + 1];
    memcpy(slots, text_slots, sizeof(text_slots));
    slots[Py_ARRAY_LENGTH(text_slots) - 1] = (PyType_Slot){Py_tp_new, tp_new};
    slots[Py_ARRAY_LENGTH(text_slots)] = (PyType_Slot){0, NULL};
    PyType_Spec spec = text_spec;
    spec.slots = slots;
    st->base_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &spec, str_type);
    if (st->base_type == NULL || PyModule_AddType(module, st->base_type) < 0) {
        return -1;
    }
    st->escaper_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &escaper_spec, NULL);
    if (st->escaper_type == NULL) {
        return -1;
    }
#ifdef HAVE_TEMPLATES
    /* The types of a t-string and its interpolations, from a small one: importing
       string.templatelib would load the string package into every process that renders. */
    PyObject *globals = PyDict_New();
    PyObject *small = globals == NULL ? NULL : PyRun_String("t'{0}'", Py_eval_input, globals, globals);
    Py_XDECREF(globals);
    if (small == NULL) {
        return -1;
    }
    st->template_type = Py_NewRef((PyObject *)Py_TYPE(small));
    PyObject *interpolations = PyObject_GetAttrString(small, "interpolations");
    Py_DECREF(small);
    if (interpolations == NULL) {
        return -1;
    }
    if (!PyTuple_CheckExact(interpolations) || PyTuple_GET_SIZE(interpolations) != 1) {
        Py_DECREF(interpolations);
        PyErr_SetString(PyExc_RuntimeError, "t'{0}' has not one interpolation");
        return -1;
    }
    st->interpolation_type = Py_NewRef((PyObject *)Py_TYPE(PyTuple_GET_ITEM(interpolations, 0)));
    Py_DECREF(interpolations);
    if (intern(&st->s_strings, "strings") < 0 ||
        intern(&st->s_interpolations, "interpolations") < 0 || intern(&st->s_value, "value") < 0 ||
        intern(&st->s_conversion, "conversion") < 0 ||
        intern(&st->s_format_spec, "format_spec") < 0) {
        return -1;
    }
    if ((st->off_strings = member_offset(st->template_type, st->s_strings)) < 0 ||
        (st->off_interpolations = member_offset(st->template_type, st->s_interpolations)) < 0 ||
        (st->off_value = member_offset(st->interpolation_type, st->s_value)) < 0 ||
        (st->off_conversion = member_offset(st->interpolation_type, st->s_conversion)) < 0 ||
        (st->off_format_spec = member_offset(st->interpolation_type, st->s_format_spec)) < 0) {
        return -1;
    }
#endif
    return 0;
}

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, module_exec},
#if PY_VERSION_HEX >= 0x030C0000
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
    {0, NULL},
};

static struct PyModuleDef htmltext_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "ptl_wsgi._htmltext_c",
    .m_doc = "C twin of ptl_wsgi._htmltext_py; use ptl_wsgi.html instead of importing it.",
    .m_size = sizeof(State),
    .m_methods = module_methods,
    .m_slots = module_slots,
    .m_traverse = module_traverse,
    .m_clear = module_clear,
    .m_free = module_free,
};

PyMODINIT_FUNC
PyInit__htmltext_c(void)
{
    return PyModuleDef_Init(&htmltext_module);
}
