/** The crud suite again, through the embedded API server's in-process transport (see helpers.ts). */
import { useInProcessTransport } from './helpers.ts';

useInProcessTransport();
await import('./crud.test.ts');
