/** The admission suite (admission.suite.ts) over HTTPS; admission.inprocess.test.ts runs it through the in-process transport. */
import { useHttpsTransport } from './helpers.ts';

useHttpsTransport();
// a module of its own per transport (the query), so both files register the suite in one worker (vitest isolate off)
const suite = './admission.suite.ts?https';
await import(suite);
