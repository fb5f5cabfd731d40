#!/usr/bin/env node
// The admin CLI. Runs the compiled sources (npm run build first).
import('../dist/src/cli/main.js').then(
  ({ runCli }) => runCli(process.argv.slice(2)),
  (error) => {
    process.stderr.write(
      `gw: cannot load the compiled CLI (run \`npm run build\`): ${error.message}\n`,
    );
    process.exit(1);
  },
);
