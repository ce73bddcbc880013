/**
 * Plain-JSON shapes of API objects used by the client layer that `apis/core.ts` does not model
 * (Events, Leases, Status, lists, CRDs, ...). Field names as in k8s.io/api 1.32; timestamps are RFC 3339.
 */
import type { KubeObject, ObjectMeta } from '../apis/core.ts';

/** metav1.Status: what the API server returns for errors and some deletes. */
export interface Status extends KubeObject {
  kind?: 'Status';
  status?: 'Success' | 'Failure';
  message?: string;
  /** Machine-readable reason (`NotFound`, `AlreadyExists`, `Conflict`, `Gone`, `TooManyRequests`, ...). */
  reason?: string;
  details?: {
    name?: string;
    group?: string;
    kind?: string;
    uid?: string;
    causes?: Array<{ reason?: string; message?: string; field?: string }>;
    retryAfterSeconds?: number;
  };
  /** HTTP status code. */
  code?: number;
}

/** A list response (`PodList`, ...). Items carry `apiVersion`/`kind` (filled in by the client). */
export interface ObjectList<T extends KubeObject> {
  apiVersion?: string;
  kind?: string;
  metadata: { resourceVersion?: string; continue?: string; remainingItemCount?: number };
  items: T[];
}

/** A reference to the object an Event is about (core/v1 ObjectReference). */
export interface ObjectReference {
  apiVersion?: string;
  kind?: string;
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  fieldPath?: string;
}

/** core/v1 Event. */
export interface KubeEvent extends KubeObject {
  metadata: ObjectMeta;
  involvedObject: ObjectReference;
  reason?: string;
  message?: string;
  type?: 'Normal' | 'Warning';
  count?: number;
  firstTimestamp?: string;
  lastTimestamp?: string;
  /** RFC 3339 with microseconds. */
  eventTime?: string | null;
  source?: { component?: string; host?: string };
  reportingComponent?: string;
  reportingInstance?: string;
  action?: string;
}

/** coordination.k8s.io/v1 Lease. `acquireTime`/`renewTime` are RFC 3339 with microseconds. */
export interface Lease extends KubeObject {
  metadata: ObjectMeta;
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
    [key: string]: unknown;
  };
}

/** core/v1 Namespace. */
export interface Namespace extends KubeObject {
  metadata: ObjectMeta;
  spec?: { finalizers?: string[] };
  status?: { phase?: 'Active' | 'Terminating' };
}

/** core/v1 ConfigMap. */
export interface ConfigMap extends KubeObject {
  metadata: ObjectMeta;
  data?: Record<string, string>;
  binaryData?: Record<string, string>;
}

/** core/v1 Secret (`data` values base64). Never log its contents. */
export interface Secret extends KubeObject {
  metadata: ObjectMeta;
  type?: string;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

/** core/v1 PersistentVolume (fields capenter reads). */
export interface PersistentVolume extends KubeObject {
  metadata: ObjectMeta;
  spec?: {
    storageClassName?: string;
    nodeAffinity?: { required?: import('../apis/core.ts').NodeSelector };
    claimRef?: ObjectReference;
    [key: string]: unknown;
  };
}

/** storage.k8s.io/v1 StorageClass. */
export interface StorageClass extends KubeObject {
  metadata: ObjectMeta;
  provisioner: string;
  volumeBindingMode?: 'Immediate' | 'WaitForFirstConsumer';
  allowedTopologies?: Array<{ matchLabelExpressions?: Array<{ key: string; values: string[] }> }>;
  parameters?: Record<string, string>;
}

/** apiextensions.k8s.io/v1 CustomResourceDefinition (structure only; schemas are opaque). */
export interface CustomResourceDefinition extends KubeObject {
  metadata: ObjectMeta;
  spec: {
    group: string;
    names: { kind: string; plural: string; singular?: string; listKind?: string; shortNames?: string[] };
    scope: 'Namespaced' | 'Cluster';
    versions: Array<{
      name: string;
      served: boolean;
      storage: boolean;
      schema?: { openAPIV3Schema?: Record<string, unknown> };
      subresources?: { status?: Record<string, never>; scale?: Record<string, unknown> };
      [key: string]: unknown;
    }>;
    [key: string]: unknown;
  };
  status?: Record<string, unknown>;
}

/** A watch event as streamed by the API server. `object` is a `Status` for `ERROR`. */
export interface WatchEvent<T extends KubeObject = KubeObject> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: T;
}
