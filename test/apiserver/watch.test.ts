/** The watch suite (watch.suite.ts) over HTTPS; watch.inprocess.test.ts runs it through the in-process transport. */
import { useHttpsTransport } from './helpers.ts';

useHttpsTransport();
// a module of its own per transport (the query), so both files register the suite in one worker (vitest isolate off)
const suite = './watch.suite.ts?https';
await import(suite);
