/** The badinput suite (badinput.suite.ts) over HTTPS; badinput.inprocess.test.ts runs it through the in-process transport. */
import { useHttpsTransport } from './helpers.ts';

useHttpsTransport();
// a module of its own per transport (the query), so both files register the suite in one worker (vitest isolate off)
const suite = './badinput.suite.ts?https';
await import(suite);
