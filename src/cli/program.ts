/**
 * The `capenter` program: its commands in the order `--help` lists them, one style (lower-case descriptions, as
 * commander's own), usage errors exiting 2. `main.ts` runs it; `scripts/generate-docs.ts` reads it to generate the
 * README's command table.
 */
import { Command } from 'commander';
import { registerApiserverCommand } from './apiserver.ts';
import { registerBootstrapCommand } from './bootstrap.ts';
import { registerControllerCommand } from './controller.ts';
import { registerConvertCommand } from './convert.ts';
import { registerDoctorCommand } from './doctor.ts';
import { registerInstanceTypesCommand } from './instance-types.ts';
import { registerPlanCommand } from './plan.ts';
import { registerSimulateCommand } from './simulate.ts';
import { registerStartCommand } from './start.ts';

/** Builds the program (nothing runs until `parseAsync`). */
export function buildProgram(): Command {
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
  registerDoctorCommand(program);
  registerPlanCommand(program);
  registerBootstrapCommand(program);
  registerConvertCommand(program);
  registerInstanceTypesCommand(program);
  registerApiserverCommand(program);
  return program;
}
