#!/usr/bin/env node
/**
 * capenter's command line. Each command lives in its own file under `src/cli/` and exports a
 * `register…Command(program)` function that is wired here.
 */
import { Command } from 'commander';
import { registerApiserverCommand } from './apiserver.ts';
import { registerControllerCommand } from './controller.ts';
import { registerConvertCommand } from './convert.ts';
import { registerInstanceTypesCommand } from './instance-types.ts';
import { registerSimulateCommand } from './simulate.ts';
import { registerStartCommand } from './start.ts';

// A closed pipe (`capenter … | head`) ends the command quietly, as Unix tools do.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
}

const program = new Command();
program
  .name('capenter')
  .description('Karpenter-compatible node autoscaler for Cluster API and AWS clusters')
  .version('0.1.0')
  .showHelpAfterError();

// Commands register themselves below (one line each).
// @register-commands
registerApiserverCommand(program);
registerInstanceTypesCommand(program);
registerSimulateCommand(program);
registerControllerCommand(program);
registerStartCommand(program);
registerConvertCommand(program);

await program.parseAsync(process.argv);
