/** The kwok CloudProvider: Node objects instead of machines, real AWS instance types and prices. */
export * from './nodes.ts';
export * from './provider.ts';
