/**
 * Adapter from the Kubernetes client to the kwok provider's {@link NodeWriter} port: the kwok provider's
 * Nodes become real Node objects on the API server (embedded or real). Used by the operator and by
 * integration tests.
 */
import type { Node } from '../../apis/core.ts';
import type { KubeClient } from '../../kube/client.ts';
import { isNotFound } from '../../kube/errors.ts';
import type { NodeWriter } from './nodes.ts';

/**
 * A {@link NodeWriter} writing Node objects through `client`.
 * `createNode` rejects with the API's 409 AlreadyExists for a duplicate name; `deleteNode` ignores 404.
 */
export class KubeNodeWriter implements NodeWriter {
  constructor(private readonly client: KubeClient) {}

  async createNode(node: Node): Promise<Node> {
    return this.client.create({ ...node, apiVersion: 'v1', kind: 'Node' });
  }

  async deleteNode(name: string): Promise<void> {
    try {
      await this.client.delete('Node', name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  async getNode(name: string): Promise<Node | undefined> {
    return this.client.tryGet('Node', name);
  }

  async listNodes(labelSelector?: Record<string, string>): Promise<Node[]> {
    const list = await this.client.list('Node', labelSelector ? { labelSelector } : {});
    return list.items.sort((a, b) => (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''));
  }
}
