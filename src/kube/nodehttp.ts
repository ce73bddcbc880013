/**
 * Node's `http` module, obtained without an ES-module import.
 *
 * On Node 24 `import … from 'node:http'` (named or namespace) builds that module's ESM namespace, which reads every
 * export, including the lazy `WebSocket`, `CloseEvent` and `MessageEvent` getters, and so loads undici (Node's
 * fetch and WebSocket implementation): about 17 MB of RSS in a controller that uses neither (measured 2026-12-02,
 * Node 24.22). `process.getBuiltinModule` returns the CommonJS module object, whose getters stay lazy. Import
 * `node:http` for types only (`import type`), and its values from here.
 */
export const nodeHttp: typeof import('node:http') = process.getBuiltinModule('node:http');
