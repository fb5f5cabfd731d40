#!/usr/bin/env node
// The admin CLI. Runs the compiled sources (npm run build first).
import('../dist/src/cli/main.js').then(
  // Exit when the command is done: keep-alive sockets (vendor validation) must not hold it open.
  ({ runCli }) => runCli(process.argv.slice(2)).then((code) => process.exit(code)),
  (error) => {
    process.stderr.write(
      `gw: cannot load the compiled CLI (run \`npm run build\`): ${error.message}\n`,
    );
    process.exit(1);
  },
);
