/** The crd suite again, through the embedded API server's in-process transport (see helpers.ts). */
import { useInProcessTransport } from './helpers.ts';

useInProcessTransport();
await import('./crd.test.ts');
