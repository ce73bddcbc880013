/**
 * `capenter bootstrap aws -o cloudformation` prints YAML that CloudFormation takes as is: no YAML anchors or
 * aliases (`&a1` / `*a1`: the same tag list on the role and the queue was emitted once and referenced; cfn-lint
 * W1101, and CloudFormation refuses aliases), and the text parses back to exactly the template object.
 */
import { describe, expect, it } from 'vitest';
import { parseDocument, parse as parseYaml, visit } from 'yaml';
import {
  CFN_VARS,
  cloudFormationTemplate,
  cloudFormationYaml,
} from '../../src/cloudprovider/aws/bootstrap/cloudformation.ts';
import type { PlanInput } from '../../src/cloudprovider/aws/bootstrap/plan.ts';

const INPUTS: PlanInput[] = [
  { clusterName: 'demo', region: 'us-west-2', partition: 'aws', accountId: '123456789012' },
  {
    clusterName: 'capa-1',
    region: 'eu-west-1',
    partition: 'aws',
    accountId: '123456789012',
    controllerRole: 'capa-1-karpenter',
    tags: { team: 'infra', env: 'prod' },
  },
];

/** Every anchor (`&name`) and alias (`*name`) in a YAML text, read from the parsed document (not a regex). */
function anchorsAndAliases(text: string): string[] {
  const found: string[] = [];
  visit(parseDocument(text), {
    Alias: (_, n) => {
      found.push(`*${n.source}`);
    },
    Node: (_, n) => {
      if (n.anchor) found.push(`&${n.anchor}`);
    },
  });
  return found;
}

describe('bootstrap aws -o cloudformation', () => {
  for (const input of INPUTS)
    it(`has no YAML anchors or aliases and parses to the template object (${input.clusterName})`, () => {
      const text = cloudFormationYaml(input);
      expect(anchorsAndAliases(text)).toEqual([]);
      expect(text).not.toMatch(/(^|[\s:-])[&*]a\d+\b/m);
      expect(parseYaml(text)).toEqual(cloudFormationTemplate(input));
      // The shared tag list is written out in full on every resource that carries it.
      const tpl = parseYaml(text) as {
        Resources: Record<string, { Properties: { Tags?: Array<{ Key: unknown; Value: unknown }> } }>;
      };
      const tagged = Object.entries(tpl.Resources).filter(([, r]) => r.Properties.Tags);
      expect(tagged.length).toBeGreaterThan(1);
      for (const [, r] of tagged)
        expect(r.Properties.Tags).toContainEqual({
          Key: 'capenter.io/bootstrap-cluster',
          Value: { 'Fn::Sub': CFN_VARS.clusterName },
        });
    });
});
