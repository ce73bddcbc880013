/**
 * The parity table's observability rows (issue 26 items 1 and 5): every metric upstream Karpenter v1.14.1
 * documents (aws/karpenter-provider-aws `website/content/en/v1.14/reference/metrics.md`, plus the one it registers
 * without documenting) and every Event reason upstream emits (kubernetes-sigs/karpenter `pkg/events/reason.go` and
 * the `events.go` files of both repositories). The upstream lists are data in
 * `test/fixtures/upstream/{metrics,events}-v1.14.1.json` (name, type, labels, source file and commit);
 * test/parity.test.ts fails on an upstream name without a row here, and test/e2e/dashboards.test.ts scrapes
 * `/metrics` after a provisioning + consolidation run and checks that every metric of a `works` row naming it
 * is exported with upstream's type and label names (a `works` row naming another test must name a test that
 * contains the metric's name).
 *
 * For metrics, `works` means exported under upstream's name, type and label names (capenter may add labels);
 * `no-effect` means upstream-internal, not exported by capenter, with the reason; `missing` means not exported
 * (yet). For Event reasons, `works` means published with upstream's reason on the object kinds upstream uses; the
 * row's test file asserts the reason. Pure data: imports only types.
 */
import type { ParityRow, ParityStatus } from './types.ts';

/** The parity scope of metrics the AWS provider registers (absent from a run with another provider). */
export const AWS_PROVIDER_SCOPE = 'AWS provider';

const E2E = 'test/e2e/dashboards.test.ts';
const METRICS_UNIT = 'src/controllers/metrics/metrics.test.ts';

/** A `metric` row. */
function metric(
  names: readonly string[],
  status: ParityStatus,
  note: string,
  test: string,
  scope?: string,
): ParityRow {
  return { kind: 'metric', names, status, note, test, ...(scope ? { scope } : {}) };
}

/** An `event` row. */
function event(names: readonly string[], status: ParityStatus, note: string, test: string): ParityRow {
  return { kind: 'event', names, status, note, test };
}

const STATUS_KINDS = ['nodeclaim', 'nodepool', 'node', 'ec2nodeclass'] as const;

/** operatorpkg's per-kind (`operator_<kind>_…`) and deprecated generic (`operator_…`) status metric names. */
function operatorNames(kind: string, family: 'status' | 'termination'): string[] {
  const p = kind ? `operator_${kind}_` : 'operator_';
  return family === 'status'
    ? [
        `${p}status_condition_transitions_total`,
        `${p}status_condition_transition_seconds`,
        `${p}status_condition_current_status_seconds`,
        `${p}status_condition_count`,
      ]
    : [`${p}termination_current_time_seconds`, `${p}termination_duration_seconds`];
}

/** The metric rows. */
export const METRIC_ROWS: ParityRow[] = [
  metric(
    [
      'karpenter_build_info',
      'karpenter_cluster_state_node_count',
      'karpenter_cluster_state_synced',
      'karpenter_cluster_state_unsynced_time_seconds',
      'karpenter_cluster_utilization_percent',
    ],
    'works',
    'build info and cluster-state gauges; `version` is capenter’s, `goversion`/`goarch` carry the Node.js version and arch',
    E2E,
  ),
  metric(
    [
      'karpenter_cloudprovider_duration_seconds',
      'karpenter_cloudprovider_errors_total',
      'karpenter_cloudprovider_instance_type_cpu_cores',
      'karpenter_cloudprovider_instance_type_memory_bytes',
      'karpenter_cloudprovider_instance_type_offering_available',
      'karpenter_cloudprovider_instance_type_offering_price_estimate',
    ],
    'works',
    'cloud provider call durations/errors (decorator around every provider) and the catalog gauges',
    E2E,
  ),
  metric(
    [
      'karpenter_nodeclaims_created_total',
      'karpenter_nodeclaims_disrupted_total',
      'karpenter_nodeclaims_instance_termination_duration_seconds',
      'karpenter_nodeclaims_terminated_total',
      'karpenter_nodeclaims_termination_duration_seconds',
    ],
    'works',
    'NodeClaim lifecycle counters and termination histograms (`zone` on terminated_total as v1.14)',
    E2E,
  ),
  metric(
    ['karpenter_nodeclaims_unhealthy_disrupted_total'],
    'works',
    'one per NodeClaim node repair deletes (`condition` snake-cased, `image_id` from the NodeClaim); registered ' +
      'by the node health controller, so only with the NodeRepair gate on (as upstream)',
    'test/controllers/health/repair.test.ts',
  ),
  metric(
    [
      'karpenter_nodes_created_total',
      'karpenter_nodes_terminated_total',
      'karpenter_nodes_drained_total',
      'karpenter_nodes_lifetime_duration_seconds',
    ],
    'works',
    'Node counters (`zone` on created/terminated as v1.14) and the lifetime histogram',
    E2E,
  ),
  metric(
    [
      'karpenter_nodes_allocatable',
      'karpenter_nodes_system_overhead',
      'karpenter_nodes_total_daemon_limits',
      'karpenter_nodes_total_daemon_requests',
      'karpenter_nodes_total_pod_limits',
      'karpenter_nodes_total_pod_requests',
      'karpenter_nodes_current_lifetime_seconds',
    ],
    'works',
    'per-node gauges with upstream’s core well-known labels, `node_name`, `phase`, `managed` (`resource_type` ' +
      'where upstream has it); the AWS provider’s extra well-known labels (`instance_family`, …) are not labels here',
    E2E,
  ),
  metric(
    ['karpenter_nodes_termination_duration_seconds'],
    'works',
    'a summary, as upstream, observed once per drained and deleted Node',
    E2E,
  ),
  metric(
    [
      'karpenter_pods_state',
      'karpenter_pods_startup_duration_seconds',
      'karpenter_pods_bound_duration_seconds',
      'karpenter_pods_unbound_time_seconds',
      'karpenter_pods_unstarted_time_seconds',
      'karpenter_pods_scheduling_decision_duration_seconds',
      'karpenter_pods_provisioning_bound_duration_seconds',
      'karpenter_pods_provisioning_startup_duration_seconds',
      'karpenter_pods_provisioning_unbound_time_seconds',
      'karpenter_pods_provisioning_unstarted_time_seconds',
      'karpenter_pods_provisioning_scheduling_undecided_time_seconds',
      'karpenter_pods_drained_total',
      'karpenter_pods_eviction_requests_total',
    ],
    'works',
    'pod state gauge (upstream’s 13 labels) and the pod timing histograms/gauges, drain and eviction counters',
    E2E,
  ),
  metric(
    [
      'karpenter_nodepools_allowed_disruptions',
      'karpenter_nodepools_limit',
      'karpenter_nodepools_nodes_consuming_budgets',
      'karpenter_nodepools_usage',
    ],
    'works',
    'NodePool budget, limit and usage gauges',
    E2E,
  ),
  metric(
    ['karpenter_nodepools_cost_total', 'karpenter_nodepools_cost_tracker_errors_total'],
    'works',
    'sum of the offering prices of each NodePool’s launched NodeClaims (USD/hour), once a minute with the instance-type metrics; a NodeClaim whose offering is unknown counts an error',
    METRICS_UNIT,
  ),
  metric(
    [
      'karpenter_voluntary_disruption_consolidation_timeouts_total',
      'karpenter_voluntary_disruption_decision_evaluation_duration_seconds',
      'karpenter_voluntary_disruption_decisions_by_nodepool_total',
      'karpenter_voluntary_disruption_decisions_total',
      'karpenter_voluntary_disruption_eligible_nodes',
      'karpenter_voluntary_disruption_failed_validations_total',
      'karpenter_voluntary_disruption_queue_failures_total',
      'karpenter_consolidation_moves_total',
      'karpenter_consolidation_score',
    ],
    'works',
    'disruption decisions, evaluation times, validation/queue failures and balanced-consolidation moves',
    E2E,
  ),
  metric(
    [
      'karpenter_scheduler_ignored_pods_count',
      'karpenter_scheduler_queue_depth',
      'karpenter_scheduler_scheduling_duration_seconds',
      'karpenter_scheduler_unfinished_work_seconds',
      'karpenter_scheduler_unschedulable_pods_count',
    ],
    'works',
    'scheduling simulation duration and gauges; queue_depth and unfinished_work_seconds exist only while a ' +
      'simulation runs, as upstream (capenter’s simulation is synchronous, so a scrape sees their families only)',
    E2E,
  ),
  metric(
    ['karpenter_scheduler_pending_pods_by_effective_zone_count'],
    'works',
    'the provisioner’s pending pods by effective zone (zone requirement, volume zones folded in, and the zones the ' +
      'pod’s own topology groups allow before placing; upstream `computeEffectiveZoneFromPod`): a zone, `flexible` ' +
      'or `none`, replaced by each simulation; the cases are in src/scheduling/scheduler.test.ts',
    'test/controllers/provisioning/provisioner.test.ts',
  ),
  metric(
    ['karpenter_interruption_received_messages_total', 'karpenter_interruption_deleted_messages_total'],
    'works',
    'the interruption controller’s SQS message counters (`message_type` as upstream)',
    'test/aws/interruption-controller.test.ts',
    AWS_PROVIDER_SCOPE,
  ),
  metric(
    ['karpenter_interruption_instance_status_unhealthy_total'],
    'works',
    'one per unhealthy EC2 instance status check of a NodeClaim’s instance, by `category`',
    'test/aws/instance-status.test.ts',
    AWS_PROVIDER_SCOPE,
  ),
  metric(
    ['karpenter_interruption_message_queue_duration_seconds'],
    'works',
    'observed per handled message: the seconds from the message’s time to its handling',
    'test/aws/interruption-controller.test.ts',
    AWS_PROVIDER_SCOPE,
  ),
  metric(
    [
      'karpenter_cloudprovider_instance_launch_failures_total',
      'karpenter_cloudprovider_instance_termination_failures_total',
    ],
    'works',
    'one per CreateFleet error entry / failed TerminateInstances, upstream’s reason strings',
    'src/cloudprovider/aws/provider.test.ts',
    AWS_PROVIDER_SCOPE,
  ),
  metric(
    ['karpenter_cloudprovider_batcher_batch_size', 'karpenter_cloudprovider_batcher_batch_time_seconds'],
    'works',
    'per batch of the CreateFleet, DescribeInstances and TerminateInstances batchers (`batcher` create_fleet, ' +
      'describe_instances, terminate_instances), upstream’s buckets',
    'src/cloudprovider/aws/provider.test.ts',
    AWS_PROVIDER_SCOPE,
  ),
  metric(
    ['karpenter_ec2nodeclasses_userdata_bytes'],
    'works',
    'raw (pre-base64) size of the user data rendered for the class, set before CreateLaunchTemplate, dropped with the class’s templates (upstream pkg/providers/launchtemplate/metrics.go; not in metrics.md)',
    'src/cloudprovider/aws/provider.test.ts',
    AWS_PROVIDER_SCOPE,
  ),
  metric(
    [...STATUS_KINDS.filter((k) => k !== 'ec2nodeclass').flatMap((k) => operatorNames(k, 'status'))],
    'works',
    'operatorpkg status-condition metrics of NodeClaims, NodePools and Nodes (Nodes labelled by their ' +
      'node-class label, `karpenter_sh_nodepool`, `karpenter_sh_initialized`), from cluster state each metrics pass',
    E2E,
  ),
  metric(
    [...STATUS_KINDS.filter((k) => k !== 'ec2nodeclass').flatMap((k) => operatorNames(k, 'termination'))],
    'works',
    'seconds since `deletionTimestamp` while terminating; the duration is observed by the pass that sees the object gone',
    E2E,
  ),
  metric(
    [...operatorNames('ec2nodeclass', 'status'), ...operatorNames('ec2nodeclass', 'termination')],
    'works',
    'exported for each node class kind of the provider (the KWOK run checks `operator_kwoknodeclass_*`, the same code)',
    E2E,
    AWS_PROVIDER_SCOPE,
  ),
  metric(
    [...operatorNames('', 'status'), ...operatorNames('', 'termination')],
    'works',
    'operatorpkg’s deprecated generic metrics (labels `group`, `kind`) for NodeClaims, NodePools and node classes, ' +
      'as upstream’s `EmitDeprecatedMetrics`',
    E2E,
  ),
  metric(
    [
      'controller_runtime_active_workers',
      'controller_runtime_max_concurrent_reconciles',
      'controller_runtime_reconcile_errors_total',
      'controller_runtime_reconcile_panics_total',
      'controller_runtime_reconcile_time_seconds',
      'controller_runtime_reconcile_timeouts_total',
      'controller_runtime_reconcile_total',
      'controller_runtime_terminal_reconcile_errors_total',
    ],
    'works',
    'every keyed controller (src/controllers/runtime/metrics.ts), labels as controller-runtime v0.23.1; ' +
      'panics, terminal errors and timeouts stay 0 (a thrown error is an `error` result, every error is retried, ' +
      'no reconciliation timeout)',
    'src/controllers/runtime/metrics.test.ts',
  ),
  metric(
    ['controller_runtime_conversion_webhook_panics_total'],
    'no-effect',
    'capenter serves no conversion webhook (karpenter.sh/v1 only), so there is nothing to count',
    'test/crds.test.ts',
  ),
  metric(
    [
      'workqueue_adds_total',
      'workqueue_depth',
      'workqueue_longest_running_processor_seconds',
      'workqueue_queue_duration_seconds',
      'workqueue_retries_total',
      'workqueue_unfinished_work_seconds',
      'workqueue_work_duration_seconds',
    ],
    'works',
    'the work queue of every keyed controller (src/kube/workqueue.ts observer, src/controllers/runtime/metrics.ts), ' +
      '`name` and `controller` the controller’s name, `priority` empty',
    'src/controllers/runtime/metrics.test.ts',
  ),
  metric(
    ['leader_election_master_status'],
    'works',
    '1 on the instance leading the Lease `name` (LEADER_ELECTION_NAME), 0 on a standby and after leadership ends',
    'test/e2e/lifecycle.test.ts',
  ),
  metric(
    ['leader_election_slowpath_total'],
    'no-effect',
    'client-go counts failures of its optimistic renew (an update from the cached Lease); capenter always renews ' +
      'with a fresh GET then update (src/kube/leaderelection.ts), so there is no fast path to fall back from',
    'test/conformance/leaderelection.test.ts',
  ),
  metric(
    ['client_go_request_total'],
    'works',
    'every Kubernetes API request (watches aside) counted by HTTP status code (`<error>` without a response) and method',
    E2E,
  ),
  metric(
    ['client_go_request_duration_seconds'],
    'works',
    'every Kubernetes API request (watches aside) by verb, group, version, kind and subresource, derived from the ' +
      'URL as operatorpkg derives them (src/kube/client.ts requestLatencyLabels, src/kube/requestlabels.test.ts)',
    E2E,
  ),
  metric(
    [
      'aws_sdk_go_request_total',
      'aws_sdk_go_request_attempt_total',
      'aws_sdk_go_request_duration_seconds',
      'aws_sdk_go_request_attempt_duration_seconds',
      'aws_sdk_go_request_retry_count',
    ],
    'works',
    'SDK middlewares on every aws provider client (src/cloudprovider/aws/sdkmetrics.ts): per call after retries ' +
      '(final code), per attempt, retries per call; `code` 0 without a response; buckets as aws-sdk-go-prometheus',
    'src/cloudprovider/aws/sdkmetrics.test.ts',
    AWS_PROVIDER_SCOPE,
  ),
];

const DISRUPTION_TESTS = 'test/controllers/disruption/timing.test.ts';
const INTERRUPTION_TEST = 'test/aws/interruption-controller.test.ts';
const TERMINATION_TEST = 'test/controllers/termination/termination.test.ts';

/** The Event reason rows. */
export const EVENT_ROWS: ParityRow[] = [
  event(
    ['ConsolidationApproved', 'ConsolidationCandidate', 'ConsolidationRejected'],
    'works',
    'balanced-consolidation decisions on the Node (and NodePool for multi-node), upstream’s messages',
    DISRUPTION_TESTS,
  ),
  event(
    ['DisruptionBlocked'],
    'works',
    'on Node, NodeClaim and NodePool, with upstream’s blocking reasons',
    'test/controllers/disruption/cases.test.ts',
  ),
  event(
    ['DisruptionTerminating'],
    'works',
    'once per disrupted Node and NodeClaim',
    'test/e2e/events-metrics.test.ts',
  ),
  event(
    ['Unconsolidatable'],
    'works',
    'on the Node and its NodeClaim, deduplicated for 15 minutes',
    'test/e2e/dashboards.test.ts',
  ),
  event(
    ['DisruptionLaunching', 'DisruptionWaitingReadiness'],
    'works',
    'on each replacement NodeClaim, with upstream’s messages (`Launching NodeClaim: Drifted`, `Waiting on readiness …`)',
    'test/controllers/disruption/scenarios.test.ts',
  ),
  event(
    ['FailedScheduling', 'Nominated'],
    'works',
    'on the Pod, upstream’s messages',
    'test/controllers/provisioning/provisioner.test.ts',
  ),
  event(
    ['NoCompatibleInstanceTypes'],
    'works',
    'on the NodePool, by the provisioner (plain and `minValues` messages, 1-min dedupe per NodePool UID) and the static-capacity controller; not during disruption simulations',
    'test/controllers/provisioning/provisioner.test.ts',
  ),
  event(['NodeRepairBlocked'], 'works', 'on the Node', 'test/controllers/health/repair.test.ts'),
  event(
    [
      'AwaitingVolumeDetachment',
      'Disrupted',
      'DoNotDisruptGracePeriodElapsed',
      'DoNotDisruptUntil',
      'FailedDraining',
      'InvalidDoNotDisruptAnnotation',
    ],
    'works',
    'drain and termination Events on the Node and its Pods',
    TERMINATION_TEST,
  ),
  event(['Evicted'], 'works', 'on each evicted Pod', 'test/conformance/eviction.test.ts'),
  event(
    ['TerminationGracePeriodExpiring'],
    'works',
    'on the NodeClaim when its termination timestamp is stamped and on its Node at each drain pass (deduplicated), ' +
      'upstream’s message `All pods will be deleted by <time>`',
    'test/controllers/termination/termination.test.ts',
  ),
  event(
    ['FailedTermination'],
    'no-effect',
    'declared in upstream’s reason.go (TerminationFailed) but emitted nowhere in v1.14.1',
    TERMINATION_TEST,
  ),
  event(
    ['FailedConsistencyCheck'],
    'works',
    'on the NodeClaim',
    'test/controllers/nodeclaim/consistency.test.ts',
  ),
  event(
    ['InsufficientCapacityError'],
    'works',
    'on the NodeClaim when every offering is exhausted',
    'test/controllers/nodeclaim/lifecycle.test.ts',
  ),
  event(
    ['NodeClassNotReady'],
    'works',
    'on the NodeClaim while its node class is not Ready',
    'test/aws/nodeclass-controller.test.ts',
  ),
  event(
    ['UnregisteredTaintMissing'],
    'works',
    'on the NodeClaim whose Node registered without the unregistered taint',
    'src/controllers/nodeclaim/lifecycle/registration.test.ts',
  ),
  event(
    [
      'CapacityReservationInstanceInterrupted',
      'InstanceStopping',
      'InstanceTerminating',
      'InstanceUnhealthy',
      'SpotInterrupted',
      'SpotRebalanceRecommendation',
      'TerminatingOnInterruption',
    ],
    'works',
    'interruption messages on the Node and its NodeClaim',
    INTERRUPTION_TEST,
  ),
  event(
    ['WaitingOnNodeClaimTermination'],
    'works',
    'on the EC2NodeClass being deleted while NodeClaims use it',
    'test/aws/nodeclass-controller.test.ts',
  ),
  event(
    ['ZonalShiftActive', 'ZonalShiftCleared'],
    'refused',
    'ENABLE_ZONAL_SHIFT=true exits 2 (ARC zonal shift is not implemented), so no zonal-shift Event is published',
    'test/cli/controller-settings.test.ts',
  ),
];
