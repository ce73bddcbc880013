/**
 * The controller kit: the two controller shapes ({@link QueueController}, {@link SingletonController}), the
 * builder of informer-fed controllers ({@link defineController}), the informer sync wait, the dependency bag and
 * Event recorder every controller takes, status conditions, and the object, index and error helpers the
 * controllers share.
 */
export * from './builder.ts';
export * from './conditions.ts';
export * from './controller.ts';
export * from './deps.ts';
export * from './errors.ts';
export * from './indexes.ts';
export * from './objects.ts';
export * from './sync.ts';
