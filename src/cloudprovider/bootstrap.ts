/**
 * Where a provider keeps the CAPI bootstrap data of a KarpenterMachinePool (part of the provider contract for CAPI
 * mode: `ProviderSetup.capi.bootstrapStore`, `./module.ts`). The KarpenterMachinePool controller
 * (`controllers/capi/`) writes the data; the provider's nodes read it at boot (CAPA's S3 flow).
 */

/** Where a pool's bootstrap data lives: `s3://<bucket>/<key>` in `region`. */
export interface BootstrapLocation {
  region: string;
  bucket: string;
  key: string;
}

/**
 * Storage of bootstrap data (the S3 bucket of the cluster). Implementations: `InMemoryBootstrapStore`
 * (`controllers/capi/bootstrap.ts`: embedded/kwok) and the aws provider's `S3BootstrapStore` (`aws/s3store.ts`). Errors must not include the data.
 */
export interface BootstrapDataStore {
  /** Writes (replaces) the object. */
  put(loc: BootstrapLocation, data: Buffer): Promise<void>;
  /** The object, or `undefined` when it does not exist. */
  get(loc: BootstrapLocation): Promise<Buffer | undefined>;
  /** Deletes the object; no error when it does not exist. */
  delete(loc: BootstrapLocation): Promise<void>;
}
