/** The eviction suite (eviction.suite.ts) over HTTPS; eviction.inprocess.test.ts runs it through the in-process transport. */
import { useHttpsTransport } from './helpers.ts';

useHttpsTransport();
// a module of its own per transport (the query), so both files register the suite in one worker (vitest isolate off)
const suite = './eviction.suite.ts?https';
await import(suite);
