/** The badinput suite (badinput.suite.ts) again, through the embedded API server's in-process transport (see helpers.ts). */
import { useInProcessTransport } from './helpers.ts';

useInProcessTransport();
// a module of its own per transport (the query), so both files register the suite in one worker (vitest isolate off)
const suite = './badinput.suite.ts?inprocess';
await import(suite);
