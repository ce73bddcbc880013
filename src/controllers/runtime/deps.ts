/**
 * What controllers are built from: the dependency bag the operator hands every controller, and the Event
 * recorder interface (upstream's `events.Recorder`).
 */
import type { Registry } from 'prom-client';
import type { CloudProvider } from '../../cloudprovider/types.ts';
import type { KubeClient } from '../../kube/client.ts';
import type { Clock } from '../../kube/clock.ts';
import type { Recorder } from '../../kube/events.ts';
import type { SharedInformers } from '../../kube/informer.ts';
import type { Logger } from '../../kube/logger.ts';

/** Something that records Events: one interface, in `kube/events.ts` (providers' controllers take it too). */
export type { Recorder } from '../../kube/events.ts';

/** Dependencies and options shared by capenter's controllers. */
export interface ControllerDeps {
  client: KubeClient;
  cloudProvider: CloudProvider;
  clock: Clock;
  logger: Logger;
  recorder: Recorder;
  /** prom-client registry the metrics are registered in. */
  registry: Registry;
  /** Shared informers (the operator's); without them the controller runs private ones. */
  informers?: SharedInformers;
}
