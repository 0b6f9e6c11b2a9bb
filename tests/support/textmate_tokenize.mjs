// Tokenize .ptl files with vscode-textmate and the PTL grammar (which embeds source.python).
// Usage: node textmate_tokenize.mjs MODULES_DIR PTL_GRAMMAR FILE...
// Prints JSON: {file: [[[start, end, scope, ...], ...] per line]}.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [modules, grammarPath, ...files] = process.argv.slice(2);
const require = createRequire(join(modules, "package.json"));
const textmate = require("vscode-textmate");
const oniguruma = require("vscode-oniguruma");
const wasm = readFileSync(join(modules, "node_modules/vscode-oniguruma/release/onig.wasm"));
await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
const python = (await import(pathToFileURL(join(modules, "node_modules/@shikijs/langs/dist/python.mjs")))).default
  .find((g) => g.scopeName === "source.python");

const registry = new textmate.Registry({
  onigLib: Promise.resolve({
    createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
    createOnigString: (s) => new oniguruma.OnigString(s),
  }),
  loadGrammar: async (scope) => {
    if (scope === "source.ptl") {
      return textmate.parseRawGrammar(readFileSync(grammarPath, "utf8"), grammarPath);
    }
    if (scope === "source.python") return structuredClone(python);
    return null;
  },
});
const grammar = await registry.loadGrammar("source.ptl");
const out = {};
for (const file of files) {
  let state = textmate.INITIAL;
  out[file] = readFileSync(file, "utf8").split("\n").map((line) => {
    const result = grammar.tokenizeLine(line, state);
    state = result.ruleStack;
    return result.tokens.map((t) => [t.startIndex, t.endIndex, ...t.scopes]);
  });
}
process.stdout.write(JSON.stringify(out));
