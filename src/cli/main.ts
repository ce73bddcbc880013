#!/usr/bin/env node
/**
 * capenter's command line. Each command lives in its own file under `src/cli/` and exports a
 * `register…Command(program)` function that is wired in `program.ts`.
 */
import { watchLauncher } from './launcher-watch.ts';
import { buildProgram } from './program.ts';

// A closed pipe (`capenter … | head`) ends the command quietly, as Unix tools do.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
}

// Under `npx capenter …`, `kill <npx pid>` reaches npm's shell, not this process: stop when the shell is gone.
watchLauncher({ env: process.env, ppid: () => process.ppid });

await buildProgram().parseAsync(process.argv);
