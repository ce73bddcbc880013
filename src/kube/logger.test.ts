import { describe, expect, it } from 'vitest';
import { createLogger, LOGGER_NAME, objectRef, reconcileFields } from './logger.ts';

function capture(opts: { level?: string; commit?: string } = {}) {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger({
    level: opts.level ?? 'debug',
    commit: opts.commit ?? '',
    now: () => Date.UTC(2026, 11, 3, 8, 52, 32, 123),
    destination: { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) },
  });
  return { logger, lines };
}

describe('createLogger (upstream zap JSON keys)', () => {
  it('writes level in zap capitals, ISO-8601 UTC time, logger "controller", message, no pino pid/hostname/msg', () => {
    const { logger, lines } = capture();
    logger.debug('d');
    logger.info('i');
    logger.warn('w');
    logger.error({ error: 'boom' }, 'e');
    expect(lines).toEqual([
      { level: 'DEBUG', time: '2026-12-03T08:52:32.123Z', logger: 'controller', message: 'd' },
      { level: 'INFO', time: '2026-12-03T08:52:32.123Z', logger: 'controller', message: 'i' },
      { level: 'WARN', time: '2026-12-03T08:52:32.123Z', logger: 'controller', message: 'w' },
      { level: 'ERROR', time: '2026-12-03T08:52:32.123Z', logger: 'controller', message: 'e', error: 'boom' },
    ]);
    expect(LOGGER_NAME).toBe('controller');
  });

  it('adds the build commit when known, and keeps the child keys (controller) between the header and the fields', () => {
    const { logger, lines } = capture({ commit: '5de1664' });
    logger.child({ controller: 'provisioner' }).info({ NodePool: objectRef('default') }, 'x');
    expect(Object.keys(lines[0] ?? {})).toEqual([
      'level',
      'time',
      'logger',
      'commit',
      'controller',
      'NodePool',
      'message',
    ]);
    expect(lines[0]).toMatchObject({
      commit: '5de1664',
      controller: 'provisioner',
      NodePool: { name: 'default' },
    });
  });

  it('renders object references as klog KObj: {name} cluster-scoped, {name, namespace} namespaced', () => {
    expect(objectRef('default-abc12')).toEqual({ name: 'default-abc12' });
    expect(objectRef('web-0', 'shop')).toEqual({ name: 'web-0', namespace: 'shop' });
    expect(objectRef('n', '')).toEqual({ name: 'n' });
    expect(
      reconcileFields('nodeclaim.lifecycle', 'karpenter.sh', 'NodeClaim', 'default-abc12', '', 'id-1'),
    ).toEqual({
      controller: 'nodeclaim.lifecycle',
      controllerGroup: 'karpenter.sh',
      controllerKind: 'NodeClaim',
      NodeClaim: { name: 'default-abc12' },
      namespace: '',
      name: 'default-abc12',
      reconcileID: 'id-1',
    });
    // one fresh UUID per reconcile, as controller-runtime's uuid.NewUUID()
    const a = reconcileFields('c', 'karpenter.sh', 'NodeClaim', 'n').reconcileID as string;
    const b = reconcileFields('c', 'karpenter.sh', 'NodeClaim', 'n').reconcileID as string;
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(b).not.toBe(a);
  });

  it('never writes user data, Secret data or tokens, even when an object is logged by mistake', () => {
    const { logger, lines } = capture();
    logger.info(
      { nodeClaim: { spec: { userData: 'join-token-xyz' } }, secret: { data: { t: 'c2VjcmV0' } } },
      'oops',
    );
    const text = JSON.stringify(lines);
    expect(text).not.toContain('join-token-xyz');
    expect(text).not.toContain('c2VjcmV0');
    expect(lines[0]).toMatchObject({ secret: { data: '[redacted]' } });
  });
});
