/**
 * The kwok provider's only side effect: writing Node objects. {@link NodeWriter} is the small port the provider
 * needs; the operator adapts the Kubernetes client to it, tests and the simulator use {@link InMemoryNodeWriter}.
 */
import type { Node } from '../../apis/core.ts';

/**
 * Node storage as the kwok provider sees it. Names are Node `metadata.name`.
 * Implementations must not mutate the objects they are given after returning.
 */
export interface NodeWriter {
  /**
   * Creates the Node and returns it as stored (the API server may add uid, resourceVersion, creationTimestamp).
   * Rejects when a Node with that name already exists (error `code: 'AlreadyExists'` for the in-memory writer,
   * HTTP 409 for a real API server) or on any API failure.
   */
  createNode(node: Node): Promise<Node>;
  /** Requests deletion of the Node. Resolves without error when no such Node exists. */
  deleteNode(name: string): Promise<void>;
  /** The Node, or `undefined` when it does not exist. */
  getNode(name: string): Promise<Node | undefined>;
  /** Every Node whose labels contain all of `labelSelector` (equality only; all Nodes when omitted). */
  listNodes(labelSelector?: Record<string, string>): Promise<Node[]>;
}

/** Thrown by {@link InMemoryNodeWriter.createNode} for a duplicate name (like the API server's 409). */
export class NodeAlreadyExistsError extends Error {
  readonly code = 'AlreadyExists' as const;
  constructor(readonly nodeName: string) {
    super(`nodes "${nodeName}" already exists`);
  }
}

/**
 * A {@link NodeWriter} backed by a Map, for tests and the in-process simulator. Stored Nodes are deep copies;
 * `createNode` fills `metadata.uid` (`node-<n>`), `resourceVersion` and `creationTimestamp` (from the injected
 * `now`, ms since epoch, default 0) like an API server would.
 */
export class InMemoryNodeWriter implements NodeWriter {
  private readonly nodes = new Map<string, Node>();
  private counter = 0;
  private readonly now: () => number;

  constructor(options: { now?: () => number } = {}) {
    this.now = options.now ?? (() => 0);
  }

  async createNode(node: Node): Promise<Node> {
    const name = node.metadata.name;
    if (!name) throw new Error('createNode: Node metadata.name is required');
    if (this.nodes.has(name)) throw new NodeAlreadyExistsError(name);
    this.counter++;
    const stored: Node = structuredClone(node);
    stored.metadata.uid ??= `node-${this.counter}`;
    stored.metadata.resourceVersion = String(this.counter);
    stored.metadata.creationTimestamp ??= new Date(this.now()).toISOString();
    this.nodes.set(name, stored);
    return structuredClone(stored);
  }

  async deleteNode(name: string): Promise<void> {
    this.nodes.delete(name);
  }

  async getNode(name: string): Promise<Node | undefined> {
    const n = this.nodes.get(name);
    return n ? structuredClone(n) : undefined;
  }

  async listNodes(labelSelector?: Record<string, string>): Promise<Node[]> {
    const out: Node[] = [];
    for (const n of this.nodes.values()) {
      const labels = n.metadata.labels ?? {};
      if (labelSelector && Object.entries(labelSelector).some(([k, v]) => labels[k] !== v)) continue;
      out.push(structuredClone(n));
    }
    return out.sort((a, b) => (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''));
  }

  /** Replaces a stored Node (for tests and the kubelet stand-in, e.g. to mark it Ready). */
  put(node: Node): void {
    const name = node.metadata.name;
    if (!name) throw new Error('put: Node metadata.name is required');
    this.nodes.set(name, structuredClone(node));
  }

  /** Number of stored Nodes. */
  get size(): number {
    return this.nodes.size;
  }
}
