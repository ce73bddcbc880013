/** The crud suite (crud.suite.ts) over HTTPS; crud.inprocess.test.ts runs it through the in-process transport. */
import { useHttpsTransport } from './helpers.ts';

useHttpsTransport();
// a module of its own per transport (the query), so both files register the suite in one worker (vitest isolate off)
const suite = './crud.suite.ts?https';
await import(suite);
