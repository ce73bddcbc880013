import { describe, expect, it } from 'vitest';
import type { KubeClient } from '../../kube/client.ts';
import type { Logger } from '../../kube/logger.ts';
import { NodeOverlayGateOffNotice } from './controller.ts';

function capture(): { logger: Logger; warnings: Array<{ obj: unknown; msg: string }> } {
  const warnings: Array<{ obj: unknown; msg: string }> = [];
  const logger = { warn: (obj: unknown, msg: string) => warnings.push({ obj, msg }) } as unknown as Logger;
  return { logger, warnings };
}

describe('nodeoverlay.gateoff (NodeOverlay gate off)', () => {
  it('warns once, naming the ignored NodeOverlays and the fix', async () => {
    const { logger, warnings } = capture();
    const client = {
      list: async () => ({ items: [{ metadata: { name: 'cheap-m5' } }, { metadata: { name: 'fuse' } }] }),
    } as unknown as KubeClient;
    const ac = new AbortController();
    ac.abort();
    await new NodeOverlayGateOffNotice({ client, logger }).start(ac.signal);
    expect(warnings).toEqual([
      {
        obj: {
          controller: 'nodeoverlay.gateoff',
          nodeoverlays: ['cheap-m5', 'fuse'],
          fix: 'set FEATURE_GATES=NodeOverlay=true (chart: settings.featureGates.nodeOverlay=true)',
        },
        msg: '2 NodeOverlay(s) ignored: the NodeOverlay feature gate is off (alpha; default false, as upstream)',
      },
    ]);
  });
  it('is silent without overlays and when the CRD is missing', async () => {
    const { logger, warnings } = capture();
    const ac = new AbortController();
    ac.abort();
    const empty = { list: async () => ({ items: [] }) } as unknown as KubeClient;
    await new NodeOverlayGateOffNotice({ client: empty, logger }).start(ac.signal);
    const missing = {
      list: async () => {
        throw new Error('the server could not find the requested resource');
      },
    } as unknown as KubeClient;
    await new NodeOverlayGateOffNotice({ client: missing, logger }).start(ac.signal);
    expect(warnings).toEqual([]);
  });
});
