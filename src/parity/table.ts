/**
 * The parity table: what capenter does with each part of upstream Karpenter v1.14.1's configuration surface, in
 * one place. Rows cover every `spec` field path of upstream's NodePool, NodeClaim and EC2NodeClass CRDs
 * (kubernetes-sigs/karpenter and aws/karpenter-provider-aws `pkg/apis/crds/*.yaml` at v1.14.1, copied byte for byte
 * into `../shared/data/crds/`), every upstream setting (environment variable, from both repositories'
 * `pkg/operator/options/options.go`), every upstream feature gate (`DefaultFeatureGates`), every metric upstream
 * documents and every Event reason upstream publishes.
 *
 * test/parity.test.ts holds the table against those sources: a field path of the upstream CRDs, an upstream
 * setting, gate, metric or Event reason without a row fails it, and so does a row naming a test file that does not exist or a
 * docs/parity.md that differs from `renderParityDoc` (src/parity/render.ts; scripts/generate-parity.ts writes it).
 *
 * Metric and Event reason rows live in src/parity/observability.ts (upstream lists in
 * `test/fixtures/upstream/{metrics,events}-v1.14.1.json`).
 *
 * Pure data and string formatting: no I/O.
 */
import { EVENT_ROWS, METRIC_ROWS } from './observability.ts';
import type { ParityKind, ParityRow, ParityStatus } from './types.ts';

export type { ParityKind, ParityRow, ParityStatus } from './types.ts';

/** The statuses in the order docs/parity.md counts them. */
export const PARITY_STATUSES: readonly ParityStatus[] = ['works', 'refused', 'no-effect', 'missing'];

/** The kinds in the order of docs/parity.md's sections. */
export const PARITY_KINDS: readonly ParityKind[] = [
  'NodePool',
  'NodeClaim',
  'EC2NodeClass',
  'setting',
  'feature gate',
  'metric',
  'event',
];

/** Upstream v1.14.1's settings (environment variable and flag), both repositories' `options.go`, in their order. */
export const UPSTREAM_SETTINGS: readonly { env: string; flag: string }[] = [
  ['KARPENTER_SERVICE', 'karpenter-service'],
  ['METRICS_PORT', 'metrics-port'],
  ['HEALTH_PROBE_PORT', 'health-probe-port'],
  ['KUBE_CLIENT_QPS', 'kube-client-qps'],
  ['KUBE_CLIENT_BURST', 'kube-client-burst'],
  ['ENABLE_PROFILING', 'enable-profiling'],
  ['DISABLE_CONTROLLER_WARMUP', 'disable-controller-warmup'],
  ['DISABLE_LEADER_ELECTION', 'disable-leader-election'],
  ['DISABLE_CLUSTER_STATE_OBSERVABILITY', 'disable-cluster-state-observability'],
  ['LEADER_ELECTION_NAME', 'leader-election-name'],
  ['LEADER_ELECTION_NAMESPACE', 'leader-election-namespace'],
  ['MEMORY_LIMIT', 'memory-limit'],
  ['CPU_REQUESTS', 'cpu-requests'],
  ['LOG_LEVEL', 'log-level'],
  ['LOG_OUTPUT_PATHS', 'log-output-paths'],
  ['LOG_ERROR_OUTPUT_PATHS', 'log-error-output-paths'],
  ['BATCH_MAX_DURATION', 'batch-max-duration'],
  ['BATCH_IDLE_DURATION', 'batch-idle-duration'],
  ['PREFERENCE_POLICY', 'preference-policy'],
  ['MIN_VALUES_POLICY', 'min-values-policy'],
  ['IGNORE_DRA_REQUESTS', 'ignore-dra-requests'],
  ['FEATURE_GATES', 'feature-gates'],
  ['CLUSTER_CA_BUNDLE', 'cluster-ca-bundle'],
  ['CLUSTER_NAME', 'cluster-name'],
  ['CLUSTER_ENDPOINT', 'cluster-endpoint'],
  ['ISOLATED_VPC', 'isolated-vpc'],
  ['EKS_CONTROL_PLANE', 'eks-control-plane'],
  ['VM_MEMORY_OVERHEAD_PERCENT', 'vm-memory-overhead-percent'],
  ['INTERRUPTION_QUEUE', 'interruption-queue'],
  ['RESERVED_ENIS', 'reserved-enis'],
  ['DISABLE_DRY_RUN', 'disable-dry-run'],
  ['ENABLE_ZONAL_SHIFT', 'enable-zonal-shift'],
  ['AMI_REFRESH_INTERVAL', 'ami-refresh-interval'],
  ['SUBNET_REFRESH_INTERVAL', 'subnet-refresh-interval'],
].map(([env, flag]) => ({ env: env!, flag: flag! }));

/** Upstream v1.14.1's feature gates (kubernetes-sigs/karpenter `pkg/operator/options/options.go`). */
export const UPSTREAM_GATES: readonly string[] = [
  'NodeRepair',
  'ReservedCapacity',
  'SpotToSpotConsolidation',
  'NodeOverlay',
  'StaticCapacity',
  'CapacityBuffer',
];

/**
 * The upstream CRD files the table covers, relative to `../shared/data/crds/` (NodePool and NodeClaim from both
 * repositories: the aws copy carries the provider's extra validation, the field paths are the same).
 */
export const UPSTREAM_CRD_FILES: readonly { kind: ParityKind; file: string }[] = [
  { kind: 'NodePool', file: 'karpenter/karpenter.sh_nodepools.yaml' },
  { kind: 'NodePool', file: 'karpenter-provider-aws/karpenter.sh_nodepools.yaml' },
  { kind: 'NodeClaim', file: 'karpenter/karpenter.sh_nodeclaims.yaml' },
  { kind: 'NodeClaim', file: 'karpenter-provider-aws/karpenter.sh_nodeclaims.yaml' },
  { kind: 'EC2NodeClass', file: 'karpenter-provider-aws/karpenter.k8s.aws_ec2nodeclasses.yaml' },
];

const CRD_TEST = 'test/crds.test.ts';
const CRD_OBJECTS = 'object holding the fields below; capenter’s CRD has upstream’s field paths (diffed)';

/** `spec.x` → `prefix + 'x'` for each name (NodePool template fields share the NodeClaim spec's). */
function under(prefix: string, names: readonly string[]): string[] {
  return names.map((n) => `${prefix}${n}`);
}

const TAINT_FIELDS = ['', '[].effect', '[].key', '[].timeAdded', '[].value'];

/**
 * Rows of the fields a NodeClaim spec and a NodePool's `spec.template.spec` share, under `prefix`
 * (`spec.` or `spec.template.spec.`), with the tests proving them for `kind`.
 */
function claimSpecRows(
  kind: 'NodePool' | 'NodeClaim',
  prefix: string,
  tests: { requirements: string; nodeClassRef: string; expireAfter: string; tgp: string },
): ParityRow[] {
  return [
    {
      kind,
      names: under(prefix, [
        'requirements',
        'requirements[].key',
        'requirements[].operator',
        'requirements[].values',
      ]),
      status: 'works',
      note:
        'In/NotIn/Exists/DoesNotExist/Gt/Lt/Gte/Lte on well-known and custom labels (incl. aws instance-tenancy, ' +
        'zone-id and capacity-reservation labels on offerings, which also give topology spread / affinity ' +
        'domains such as topology.k8s.aws/zone-id; placement-group-id on every type and placement-group-partition ' +
        'per offering of a class with a placementGroupSelector); a karpenter.k8s.aws key the ' +
        'aws provider never sets (unknown keys) is refused by validation ' +
        '(src/apis/schemas.ts) naming the field; restricted label domains are karpenter.sh and karpenter.k8s.aws ' +
        'as upstream v1.14 (kubernetes.io and k8s.io keys are custom labels)',
      test: tests.requirements,
    },
    {
      kind,
      names: under(prefix, ['requirements[].minValues']),
      status: 'works',
      note: 'Strict by default; MIN_VALUES_POLICY=BestEffort relaxes it',
      test: 'src/scheduling/instancetypes.test.ts',
    },
    {
      kind,
      names: under(prefix, ['nodeClassRef', 'nodeClassRef.group', 'nodeClassRef.kind', 'nodeClassRef.name']),
      status: 'works',
      note: 'resolved to the provider’s NodeClass; not Ready → NodeClassReady=False, no launch',
      test: tests.nodeClassRef,
    },
    {
      kind,
      names: under(`${prefix}taints`, TAINT_FIELDS),
      status: 'works',
      note: 'scheduled against, registered on the Node and synced (not on Bottlerocket nodes, which register them)',
      test: 'src/controllers/nodeclaim/lifecycle/registration.test.ts',
    },
    {
      kind,
      names: under(`${prefix}startupTaints`, TAINT_FIELDS),
      status: 'works',
      note: 'tolerated for scheduling, block initialization until removed, left out of DaemonSet overhead checks',
      test: 'src/controllers/nodeclaim/lifecycle/initialization.test.ts',
    },
    {
      kind,
      names: under(prefix, ['expireAfter']),
      status: 'works',
      note: 'default 720h, `Never`; forceful expiration',
      test: tests.expireAfter,
    },
    {
      kind,
      names: under(prefix, ['terminationGracePeriod']),
      status: 'works',
      note: 'drain deadline; karpenter.sh/nodeclaim-termination-timestamp; pods force-deleted at the deadline',
      test: tests.tgp,
    },
  ];
}

const NODEPOOL_ROWS: ParityRow[] = [
  {
    kind: 'NodePool',
    names: ['spec', 'spec.disruption', 'spec.template', 'spec.template.metadata', 'spec.template.spec'],
    status: 'works',
    note: CRD_OBJECTS,
    test: CRD_TEST,
  },
  {
    kind: 'NodePool',
    names: [
      'spec.disruption.budgets',
      'spec.disruption.budgets[].nodes',
      'spec.disruption.budgets[].reasons',
      'spec.disruption.budgets[].schedule',
      'spec.disruption.budgets[].duration',
    ],
    status: 'works',
    note: 'count or percent (rounded up, minus disrupting), reasons Underutilized/Empty/Drifted, cron UTC + duration',
    test: 'src/disruption/budgets.test.ts',
  },
  {
    kind: 'NodePool',
    names: ['spec.disruption.consolidateAfter'],
    status: 'works',
    note: 'duration or `Never`, from the last pod event',
    test: 'src/disruption/candidates.test.ts',
  },
  {
    kind: 'NodePool',
    names: ['spec.disruption.consolidationPolicy'],
    status: 'works',
    note: 'WhenEmpty, WhenEmptyOrUnderutilized, Balanced (upstream v1.14 balanced.go scoring, k = 2)',
    test: 'src/disruption/balanced.test.ts',
  },
  {
    kind: 'NodePool',
    names: ['spec.limits'],
    status: 'works',
    note: 'cpu, memory, extended resources and `nodes`',
    test: 'src/scheduling/limits.test.ts',
  },
  {
    kind: 'NodePool',
    names: ['spec.replicas'],
    status: 'works',
    note: 'static capacity (StaticCapacity gate): the static controller keeps `replicas` NodeClaims',
    test: 'test/controllers/static/static.test.ts',
  },
  {
    kind: 'NodePool',
    names: ['spec.template.metadata.labels', 'spec.template.metadata.annotations'],
    status: 'works',
    note: 'copied onto NodeClaims and Nodes',
    test: 'src/controllers/provisioning/nodeclaim.test.ts',
  },
  ...claimSpecRows('NodePool', 'spec.template.spec.', {
    requirements: 'src/scheduling/requirements.test.ts',
    nodeClassRef: 'test/controllers/nodepool/nodepool.test.ts',
    expireAfter: 'src/disruption/expiration.test.ts',
    tgp: 'test/controllers/termination/termination.test.ts',
  }),
  {
    kind: 'NodePool',
    names: ['spec.weight'],
    status: 'works',
    note: 'higher weight first; the next NodePool when it cannot fit',
    test: 'src/scheduling/scheduler.test.ts',
  },
];

const NODECLAIM_ROWS: ParityRow[] = [
  {
    kind: 'NodeClaim',
    names: ['spec'],
    status: 'works',
    note: CRD_OBJECTS,
    test: CRD_TEST,
  },
  ...claimSpecRows('NodeClaim', 'spec.', {
    requirements: 'src/cloudprovider/offerings.test.ts',
    nodeClassRef: 'src/controllers/nodeclaim/lifecycle/launch.test.ts',
    expireAfter: 'src/controllers/nodeclaim/expiration/controller.test.ts',
    tgp: 'src/controllers/nodeclaim/lifecycle/termination.test.ts',
  }),
  {
    kind: 'NodeClaim',
    names: ['spec.resources', 'spec.resources.requests'],
    status: 'works',
    note: 'the scheduled pods’ requests plus DaemonSet overhead, written by the provisioner',
    test: 'src/controllers/provisioning/nodeclaim.test.ts',
  },
];

const EC2NODECLASS_ROWS: ParityRow[] = [
  { kind: 'EC2NodeClass', names: ['spec'], status: 'works', note: CRD_OBJECTS, test: CRD_TEST },
  {
    kind: 'EC2NodeClass',
    names: ['spec.amiFamily', 'spec.userData'],
    scope: 'amiFamily AL2023, AL2, Bottlerocket, Custom',
    status: 'works',
    note: 'allocatable per family; user data merged as upstream (nodeadm MIME, bootstrap.sh, TOML, pass-through)',
    test: 'src/cloudprovider/aws/userdata.test.ts',
  },
  {
    kind: 'EC2NodeClass',
    names: ['spec.amiFamily'],
    scope: 'amiFamily AL2023 (or an al2023 alias) with the cluster CIDR unknown',
    status: 'works',
    note:
      'ValidationSucceeded=False reason ClusterCIDRResolutionFailed "Failed to detect the cluster CIDR": not Ready, ' +
      'nothing launches, until EKS DescribeCluster gives a service CIDR (a 5xx is retried), as upstream validation.go',
    test: 'test/aws/nodeclass-controller.test.ts',
  },
  {
    kind: 'EC2NodeClass',
    names: ['spec.amiFamily', 'spec.userData'],
    scope: 'amiFamily Windows2019, Windows2022, Windows2025',
    status: 'works',
    note:
      'a <powershell> block: the user script, then Start-EKSBootstrap.ps1 with cluster, CA, kubelet labels, ' +
      'taints, max pods and DNS (equal to upstream testdata windows_*.golden)',
    test: 'src/cloudprovider/aws/userdata.test.ts',
  },
  {
    kind: 'EC2NodeClass',
    names: [
      'spec.amiSelectorTerms',
      'spec.amiSelectorTerms[].alias',
      'spec.amiSelectorTerms[].id',
      'spec.amiSelectorTerms[].name',
      'spec.amiSelectorTerms[].owner',
      'spec.amiSelectorTerms[].tags',
    ],
    status: 'works',
    note: 'alias family@latest or pinned (SSM), id, name (owners self/amazon by default), owner, tags',
    test: 'src/cloudprovider/aws/nodeclass/filters.test.ts',
  },
  {
    kind: 'EC2NodeClass',
    names: ['spec.amiSelectorTerms[].ssmParameter'],
    status: 'works',
    note: 'the parameter’s value is the image ID',
    test: 'test/aws/nodeclass-controller.test.ts',
  },
  {
    kind: 'EC2NodeClass',
    names: ['spec.associatePublicIPAddress', 'spec.detailedMonitoring'],
    status: 'works',
    note:
      'written into the launch template (primary NetworkInterface AssociatePublicIpAddress; Monitoring.Enabled, ' +
      'src/cloudprovider/aws/launchtemplates.ts); the test asserts the CAPI rendering, not an EC2 launch',
    test: 'src/controllers/capi/desired.test.ts',
  },
  {
    kind: 'EC2NodeClass',
    names: [
      'spec.blockDeviceMappings',
      'spec.blockDeviceMappings[].deviceName',
      'spec.blockDeviceMappings[].ebs',
      'spec.blockDeviceMappings[].ebs.deleteOnTermination',
      'spec.blockDeviceMappings[].ebs.encrypted',
      'spec.blockDeviceMappings[].ebs.iops',
      'spec.blockDeviceMappings[].ebs.kmsKeyID',
      'spec.blockDeviceMappings[].ebs.snapshotID',
      'spec.blockDeviceMappings[].ebs.throughput',
      'spec.blockDeviceMappings[].ebs.volumeSize',
      'spec.blockDeviceMappings[].ebs.volumeType',
    ],
    status: 'works',
    note: 'launch template block devices (GiB, gp3/encrypted/delete-on-termination defaults; family defaults)',
    test: 'src/cloudprovider/aws/launchtemplates.test.ts',
  },
  {
    kind: 'EC2NodeClass',
    names: ['spec.blockDeviceMappings[].rootVolume'],
    status: 'works',
    note: 'the root volume’s size sets ephemeral-storage allocatable',
    test: 'src/cloudprovider/aws/catalog/allocatable.test.ts',
  },
  {
    kind: 'EC2NodeClass',
    names: ['spec.blockDeviceMappings[].ebs.volumeInitializationRate'],
    status: 'works',
    note: 'copied into the launch template’s Ebs.VolumeInitializationRate (needs snapshotID)',
    test: 'src/cloudprovider/aws/launchfields.test.ts',
  },
  {
    kind: 'EC2NodeClass',
    names: [
      'spec.capacityReservationSelectorTerms',
      'spec.capacityReservationSelectorTerms[].id',
      'spec.capacityReservationSelectorTerms[].instanceMatchCriteria',
      'spec.capacityReservationSelectorTerms[].ownerID',
      'spec.capacityReservationSelectorTerms[].tags',
    ],
    status: 'works',
    note:
      'status.capacityReservations, CapacityReservationsReady, `reserved` offerings, targeted launches with ' +
      'on-demand fallback, capacity blocks, interruptible reservations (ReservedCapacity gate); each reservation ' +
      'counted across one scheduling pass (src/scheduling/reservations.ts, upstream ReservationManager)',
    test: 'test/aws/nodeclass-controller.test.ts',
  },
  {
    kind: 'EC2NodeClass',
    names: [
      'spec.connectionTracking',
      'spec.connectionTracking.tcpEstablishedTimeout',
      'spec.connectionTracking.udpStreamTimeout',
      'spec.connectionTracking.udpTimeout',
    ],
    status: 'works',
    note: 'ConnectionTrackingSpecification on the primary network interface; limits the class to Nitro types',
    test: 'src/cloudprovider/aws/launchfields.test.ts',
  },
  {
    kind: 'EC2NodeClass',
    names: ['spec.context'],
    status: 'works',
    note: 'CreateFleet Context (not for NodeClaims whose minValues were relaxed, as upstream)',
    test: 'src/cloudprovider/aws/launchfields.test.ts',
  },
  {
    kind: 'EC2NodeClass',
    names: ['spec.cpuOptions', 'spec.cpuOptions.nestedVirtualization'],
    status: 'works',
    note:
      '`disabled` goes into the launch template’s CpuOptions; `enabled` is refused at validation (capenter’s ' +
      'instance-type data does not record which types support nested virtualization)',
    test: 'src/cloudprovider/aws/launchfields.test.ts',
  },
  {
    kind: 'EC2NodeClass',
    names: ['spec.instanceProfile'],
    status: 'works',
    note: 'unmanaged instance profile used as is',
    test: 'src/cloudprovider/aws/provider.test.ts',
  },
  {
    kind: 'EC2NodeClass',
    names: ['spec.role'],
    status: 'works',
    note:
      'managed instance profile under /karpenter/<region>/<cluster>/<uid>/, role mutable, deleted with the class; ' +
      'orphans (old role, crash, class gone) collected by instanceprofile.garbagecollection after 1 h protection ' +
      '(test/aws/instanceprofile-gc.test.ts)',
    test: 'test/aws/nodeclass-controller.test.ts',
  },
  {
    kind: 'EC2NodeClass',
    names: ['spec.instanceStorePolicy'],
    scope: 'amiFamily AL2023, AL2',
    status: 'works',
    note: 'RAID0: ephemeral-storage from local NVMe; nodeadm localStorage / bootstrap.sh --local-disks raid0',
    test: 'src/cloudprovider/aws/catalog/allocatable.test.ts',
  },
  {
    kind: 'EC2NodeClass',
    names: ['spec.instanceStorePolicy'],
    scope: 'amiFamily Bottlerocket',
    status: 'works',
    note:
      'RAID0: settings.bootstrap-commands."000-mount-instance-storage" as upstream (bottlerocket golden files); the ' +
      'default or legacy --dirs bind by the AMI version from the alias, a name term or the resolved AMI name, as ' +
      'upstream resolveAMIVersion',
    test: 'src/cloudprovider/aws/amiversion.test.ts',
  },
  {
    kind: 'EC2NodeClass',
    names: ['spec.ipPrefixCount'],
    status: 'works',
    note: 'Ipv4PrefixCount (Ipv6PrefixCount on IPv6 clusters) on the primary network interface',
    test: 'src/cloudprovider/aws/launchfields.test.ts',
  },
  {
    kind: 'EC2NodeClass',
    names: [
      'spec.kubelet',
      'spec.kubelet.clusterDNS',
      'spec.kubelet.evictionHard',
      'spec.kubelet.evictionSoft',
      'spec.kubelet.kubeReserved',
      'spec.kubelet.maxPods',
      'spec.kubelet.podsPerCore',
      'spec.kubelet.systemReserved',
    ],
    status: 'works',
    note: 'allocatable as upstream computes it; written into every family’s user data',
    test: 'src/cloudprovider/aws/catalog/allocatable.test.ts',
  },
  {
    kind: 'EC2NodeClass',
    names: [
      'spec.kubelet.cpuCFSQuota',
      'spec.kubelet.evictionMaxPodGracePeriod',
      'spec.kubelet.evictionSoftGracePeriod',
      'spec.kubelet.imageGCHighThresholdPercent',
      'spec.kubelet.imageGCLowThresholdPercent',
    ],
    scope: 'amiFamily AL2023',
    status: 'works',
    note:
      'written into the nodeadm NodeConfig kubelet config as upstream marshals v1.KubeletConfiguration (empty fields ' +
      'left out, grace periods as Go durations: 90s → 1m30s; a non-duration is refused naming the field)',
    test: 'src/cloudprovider/aws/userdata.test.ts',
  },
  {
    kind: 'EC2NodeClass',
    names: [
      'spec.kubelet.cpuCFSQuota',
      'spec.kubelet.evictionMaxPodGracePeriod',
      'spec.kubelet.evictionSoftGracePeriod',
      'spec.kubelet.imageGCHighThresholdPercent',
      'spec.kubelet.imageGCLowThresholdPercent',
    ],
    scope: 'amiFamily AL2, Bottlerocket',
    status: 'works',
    note: 'bootstrap.sh --kubelet-extra-args flags (AL2) and settings.kubernetes keys (Bottlerocket TOML), as upstream',
    test: 'src/cloudprovider/aws/userdata.test.ts',
  },
  {
    kind: 'EC2NodeClass',
    names: [
      'spec.metadataOptions',
      'spec.metadataOptions.httpEndpoint',
      'spec.metadataOptions.httpProtocolIPv6',
      'spec.metadataOptions.httpPutResponseHopLimit',
      'spec.metadataOptions.httpTokens',
    ],
    status: 'works',
    note: 'launch template MetadataOptions; upstream defaults (tokens required, hop limit 1)',
    test: 'src/cloudprovider/aws/launchtemplates.test.ts',
  },
  {
    kind: 'EC2NodeClass',
    names: [
      'spec.networkInterfaces',
      'spec.networkInterfaces[].deviceIndex',
      'spec.networkInterfaces[].interfaceType',
      'spec.networkInterfaces[].networkCardIndex',
    ],
    status: 'works',
    note:
      "upstream's CEL rules (primary interface, unique card/device pairs, one efa-only per card); the launch " +
      'template carries the list; vpc.amazonaws.com/efa = efa-only count, efa-only on card 0 takes an ENI from max ' +
      'pods, types that do not fit the layout are left out (per-card ENI limits from DescribeInstanceTypes only); ' +
      'a NodeClaim requesting vpc.amazonaws.com/efa gets one efa interface per EFA device (card i, device 0/1)',
    test: 'src/cloudprovider/aws/efa.test.ts',
  },
  {
    kind: 'EC2NodeClass',
    names: [
      'spec.placementGroupSelector',
      'spec.placementGroupSelector.id',
      'spec.placementGroupSelector.name',
    ],
    status: 'works',
    note:
      'as upstream v1.14.1: DescribePlacementGroups (id or name, state available) kept in memory (1 min, last ' +
      'group 24 h; upstream has no status field) → PlacementGroupReady (False PlacementGroupNotFound / ' +
      'PlacementGroupResolutionFailed naming the field; not Ready, nothing launches); launch template ' +
      'Placement.GroupId and PartitionNumber (lowest partition the NodeClaim allows, else EC2 picks and the label ' +
      'is read back); labels placement-group-id / placement-group-partition on instance types, offerings (one per ' +
      'partition) and NodeClaims; PlacementGroupDrift; plan resolves it too; capacity errors scoped to the group ' +
      "/ targeted partition, a spread group's 7-per-zone limit error marks the zone for the group. Not: " +
      'strategy compatibility of instance types (test/aws/nodeclass-controller.test.ts for the condition)',
    test: 'src/cloudprovider/aws/placementgroup.test.ts',
  },
  {
    kind: 'EC2NodeClass',
    names: [
      'spec.securityGroupSelectorTerms',
      'spec.securityGroupSelectorTerms[].id',
      'spec.securityGroupSelectorTerms[].name',
      'spec.securityGroupSelectorTerms[].tags',
      'spec.subnetSelectorTerms',
      'spec.subnetSelectorTerms[].id',
      'spec.subnetSelectorTerms[].tags',
    ],
    status: 'works',
    note: 'resolved into status.subnets / status.securityGroups; SubnetsReady, SecurityGroupsReady',
    test: 'test/aws/nodeclass-controller.test.ts',
  },
  {
    kind: 'EC2NodeClass',
    names: ['spec.tags'],
    status: 'works',
    note: 'on instances, volumes, fleet and launch templates, with upstream’s own tags; restricted keys refused',
    test: 'src/cloudprovider/aws/provider.test.ts',
  },
];

/** `works` for a gate capenter implements. */
function gateRow(name: string, note: string, test: string): ParityRow {
  return { kind: 'feature gate', names: [name], status: 'works', note, test };
}

const GATE_ROWS: ParityRow[] = [
  gateRow(
    'NodeRepair',
    'node auto-repair from the provider’s repair policies',
    'test/controllers/health/repair.test.ts',
  ),
  gateRow(
    'ReservedCapacity',
    'capacity reservations (default true, as upstream)',
    'test/aws/capacity-reservations.test.ts',
  ),
  gateRow(
    'SpotToSpotConsolidation',
    'spot → cheaper spot replacement (a single candidate needs 15 cheaper spot types, as upstream)',
    'src/disruption/singlenode.test.ts',
  ),
  gateRow(
    'NodeOverlay',
    'karpenter.sh/v1alpha1 NodeOverlays adjust prices and capacity; preview instance types (aws v1.14, PR #9249): ' +
      'an aws type without a price gets on-demand and spot offerings at the absolute `price` of a validated overlay ' +
      'whose only requirement is node.kubernetes.io/instance-type In, as upstream GetOverlayPrice, and is chosen ' +
      'when cheapest and launched (src/cloudprovider/aws/previewtypes.test.ts, provider.test.ts)',
    'test/nodeoverlay.test.ts',
  ),
  gateRow('StaticCapacity', 'NodePool spec.replicas', 'test/controllers/static/static.test.ts'),
  {
    kind: 'feature gate',
    names: ['CapacityBuffer'],
    status: 'refused',
    note:
      '`CapacityBuffer=false` (upstream default) is accepted; `=true` exits 2 naming the gate ' +
      '(src/operator/options.ts parseFeatureGates); no CapacityBuffer API',
    test: 'src/operator/options.test.ts',
  },
];

/** A setting capenter implements under upstream's name. */
function settingRow(names: string[], note: string, test: string): ParityRow {
  return { kind: 'setting', names, status: 'works', note, test };
}

const SETTINGS_TEST = 'test/cli/controller-settings.test.ts';

const SETTING_ROWS: ParityRow[] = [
  settingRow(
    ['BATCH_IDLE_DURATION', 'BATCH_MAX_DURATION'],
    'provisioning batch window',
    'src/operator/options.test.ts',
  ),
  settingRow(
    ['METRICS_PORT', 'HEALTH_PROBE_PORT'],
    'Prometheus /metrics; /healthz, /readyz',
    'src/operator/options.test.ts',
  ),
  settingRow(
    ['LOG_LEVEL', 'LOG_OUTPUT_PATHS'],
    'log level (also warn, silent) and destinations',
    'src/operator/options.test.ts',
  ),
  settingRow(
    ['KUBE_CLIENT_QPS', 'KUBE_CLIENT_BURST'],
    'API client rate limit',
    'test/cli/kube-client-qps.test.ts',
  ),
  settingRow(
    ['DISABLE_LEADER_ELECTION', 'LEADER_ELECTION_NAME', 'LEADER_ELECTION_NAMESPACE'],
    'Lease-based leader election',
    'test/conformance/leaderelection.test.ts',
  ),
  settingRow(['PREFERENCE_POLICY'], 'Respect / Ignore preferred terms', 'src/disruption/preferences.test.ts'),
  settingRow(
    ['MIN_VALUES_POLICY'],
    'Strict / BestEffort minValues',
    'test/controllers/provisioning/provisioner.test.ts',
  ),
  settingRow(['FEATURE_GATES'], 'upstream’s default string loads; see the feature gate rows', SETTINGS_TEST),
  settingRow(
    ['CLUSTER_NAME', 'CLUSTER_ENDPOINT', 'EKS_CONTROL_PLANE'],
    'aws provider cluster identity',
    'src/cloudprovider/aws/settings.test.ts',
  ),
  settingRow(['CLUSTER_CA_BUNDLE'], 'node bootstrap CA', 'src/cloudprovider/aws/cluster.test.ts'),
  settingRow(['INTERRUPTION_QUEUE'], 'SQS interruption queue', 'test/aws/interruption-controller.test.ts'),
  settingRow(
    ['ISOLATED_VPC', 'VM_MEMORY_OVERHEAD_PERCENT'],
    'no Pricing API calls; memory overhead in capacity',
    'src/cloudprovider/aws/provider.test.ts',
  ),
  settingRow(
    ['RESERVED_ENIS', 'AMI_REFRESH_INTERVAL', 'SUBNET_REFRESH_INTERVAL'],
    'ENIs kept out of max pods; re-resolution period of EC2NodeClasses',
    'src/cloudprovider/aws/settings.test.ts',
  ),
  {
    kind: 'setting',
    names: [
      'KARPENTER_SERVICE',
      'ENABLE_PROFILING',
      'DISABLE_CONTROLLER_WARMUP',
      'MEMORY_LIMIT',
      'CPU_REQUESTS',
      'LOG_ERROR_OUTPUT_PATHS',
    ],
    status: 'no-effect',
    note:
      'upstream-internal (webhook Service, Go pprof, informer warm-up, Go GC/GOMAXPROCS, zap errors): a value ' +
      'other than upstream’s default warns `has no effect in capenter (why)` (src/operator/upstream-settings.ts)',
    test: 'src/operator/options.test.ts',
  },
  settingRow(
    ['DISABLE_DRY_RUN'],
    'EC2NodeClass ValidationSucceeded checks EC2 authorization as upstream validation.go: the class’s launch ' +
      'template (a real CreateLaunchTemplate), DryRun CreateFleet, DryRun RunInstances; UnauthorizedOperation → ' +
      'False CreateLaunchTemplateAuthCheckFailed / CreateFleetAuthCheckFailed / RunInstancesAuthCheckFailed with ' +
      'upstream’s message and the fix, verdicts cached 30 min per class state; true makes none of these calls',
    'test/aws/nodeclass-controller.test.ts',
  ),
  {
    kind: 'setting',
    names: ['DISABLE_CLUSTER_STATE_OBSERVABILITY', 'IGNORE_DRA_REQUESTS'],
    status: 'refused',
    note:
      'only upstream’s default is accepted (false; true): the other value exits 2 naming the setting ' +
      '(src/operator/upstream-settings.ts); DRA claims are always ignored',
    test: 'src/operator/options.test.ts',
  },
  {
    kind: 'setting',
    names: ['ENABLE_ZONAL_SHIFT'],
    status: 'refused',
    note: 'true exits 2: ARC zonal shift is not implemented (src/cloudprovider/aws/settings.ts)',
    test: SETTINGS_TEST,
  },
];

/** The table. */
export const PARITY_TABLE: readonly ParityRow[] = [
  ...NODEPOOL_ROWS,
  ...NODECLAIM_ROWS,
  ...EC2NODECLASS_ROWS,
  ...SETTING_ROWS,
  ...GATE_ROWS,
  ...METRIC_ROWS,
  ...EVENT_ROWS,
];
