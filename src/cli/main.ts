#!/usr/bin/env node
/**
 * capenter's command line. Each command lives in its own file under `src/cli/` and exports a
 * `register…Command(program)` function that is wired here.
 */
import { Command } from 'commander';
import { registerApiserverCommand } from './apiserver.ts';
import { registerControllerCommand } from './controller.ts';
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
  .showHelpAfterError()
  // Usage errors (unknown command or option, missing argument) exit 2, like invalid input; help and version 0.
  // Set before the commands are added: each command inherits it.
  .exitOverride((err) => {
    process.exit(err.code === 'commander.helpDisplayed' || err.code === 'commander.version' ? 0 : 2);
  });

// Commands register themselves below (one line each), in the order `--help` lists them: the ones a new user
// runs first, then the tools.
// @register-commands
registerStartCommand(program);
registerSimulateCommand(program);
registerControllerCommand(program);
registerInstanceTypesCommand(program);
registerApiserverCommand(program);

await program.parseAsync(process.argv);
