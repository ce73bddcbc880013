/** The provider module list: unique names, settings without clashes, kinds agreeing with the providers' code. */
import { describe, expect, it } from 'vitest';
import { checkSettingList } from '../config/settings.ts';
import { EC2NodeClassResolvedConditions } from './aws/nodeclass/types.ts';
import { ConditionMachineDeploymentsReady } from './clusterapi/controllers/nodeclass.ts';
import { orList, PROVIDER_MODULES, providerModule, providerNames } from './modules.ts';

describe('PROVIDER_MODULES', () => {
  it('names kwok (the default), aws and clusterapi once each, with settings that do not clash', () => {
    expect(PROVIDER_MODULES.map((m) => m.name)).toEqual(['kwok', 'aws', 'clusterapi']);
    expect(() => checkSettingList(PROVIDER_MODULES.flatMap((m) => m.settings))).not.toThrow();
    expect(providerNames()).toBe('"kwok", "aws" or "clusterapi"');
    expect(orList(['a'])).toBe('a');
    expect(providerModule('gce')).toBeUndefined();
  });

  it("declares each NodeClass kind's Ready dependents as its controller sets them", () => {
    const kinds = Object.fromEntries(
      PROVIDER_MODULES.flatMap((m) =>
        m.nodeClassKinds.map((k) => [`${m.name}/${k.kind}`, k.readyDependents]),
      ),
    );
    expect(kinds).toEqual({
      'kwok/KWOKNodeClass': [],
      'kwok/EC2NodeClass': [],
      'aws/EC2NodeClass': EC2NodeClassResolvedConditions,
      'clusterapi/ClusterAPINodeClass': [ConditionMachineDeploymentsReady],
    });
  });

  it('aws refuses an embedded run without an emulator and reads its region from AWS_REGION', () => {
    const aws = providerModule('aws');
    expect(aws?.embedded?.check?.({})).toMatch(
      /^start --cloud-provider aws runs against an AWS API emulator only/,
    );
    expect(aws?.embedded?.check?.({ AWS_ENDPOINT_URL: 'http://127.0.0.1:5000' })).toBeUndefined();
    expect(aws?.embedded?.defaultRegion?.({ AWS_REGION: 'eu-west-1' })).toBe('eu-west-1');
  });

  it('aws configure validates the cluster name and hands it to the core settings', () => {
    const aws = providerModule('aws');
    const core = { region: 'us-west-2', clusterName: 'cluster-1' };
    expect(() => aws?.configure({ env: {} }, core)).toThrow(/CLUSTER_NAME accepts/);
    // no AWS_REGION and no --region: left empty here, the instance metadata service answers at load (as upstream)
    expect(aws?.configure({ flags: { clusterName: 'prod' }, env: {} }, core)).toMatchObject({
      clusterName: 'prod',
      region: '',
    });
    expect(core.clusterName).toBe('prod');
    // --region (a core flag) is handed over from the core settings
    expect(
      aws?.configure({ flags: { clusterName: 'prod', region: 'us-west-2' }, env: {} }, core),
    ).toMatchObject({
      region: 'us-west-2',
    });
  });
});
