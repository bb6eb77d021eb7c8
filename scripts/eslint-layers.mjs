// @ts-check
// The layering of the source tree, enforced on every import (the way Copilot
// Chat's lint zones keep `common/` free of `vscode`). Each layer lists what
// it may import; `vscode` itself only the VS Code adapters may import.
//
//   src/engine/common  browser-safe engine code (types, events, schemas,
//                  scoring, diff): imports nothing but itself and zod, and
//                  no Node.js module (the dashboard page compiles it too)
//   src/engine     the engine: imports nothing above it
//   src/protocol   message schemas: the engine's common code only
//   src/worker     the worker thread and its host-side client: engine + protocol
//   src/dashboard  the dashboard's model and feed (host side, no vscode): engine + protocol
//   src/cli        the command line: engine
//   webview/src    the dashboard page: protocol and the engine's common code
//   src/vscode     the VS Code adapters: all of the above but the CLI
import { builtinModules } from 'node:module';
import { dirname, relative, resolve } from 'node:path';

/** Layer name -> the layers it may import from (itself included). */
export const LAYERS = {
  'src/engine/common': ['src/engine/common'],
  'src/engine': ['src/engine', 'src/engine/common'],
  'src/protocol': ['src/protocol', 'src/engine/common'],
  'src/worker': ['src/worker', 'src/protocol', 'src/engine', 'src/engine/common'],
  'src/dashboard': ['src/dashboard', 'src/protocol', 'src/engine', 'src/engine/common'],
  'src/cli': ['src/cli', 'src/engine', 'src/engine/common'],
  'webview/src': ['webview/src', 'src/protocol', 'src/engine/common'],
  'src/vscode': ['src/vscode', 'src/dashboard', 'src/worker', 'src/protocol', 'src/engine', 'src/engine/common'],
};
/** Files that belong to a layer without living in its folder. */
const FILE_LAYERS = { 'src/cli.ts': 'src/cli', 'src/extension.ts': 'src/vscode' };
/** Layers that must run in a browser: no Node.js module, under any name. */
const BROWSER_SAFE = ['src/engine/common', 'webview/src'];
const NODE_MODULES = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);
/** Where `import 'vscode'` is allowed. */
const VSCODE_ALLOWED = ['src/vscode', 'src/extension.ts', 'test/host'];

/** @param {string} path repository-relative, forward slashes */
function layerOf(path) {
  if (path in FILE_LAYERS) return FILE_LAYERS[/** @type {keyof typeof FILE_LAYERS} */ (path)];
  // LAYERS lists a nested layer before its parent: the first match is the innermost.
  return Object.keys(LAYERS).find((layer) => path === layer || path.startsWith(`${layer}/`)) ?? null;
}

/** @type {import('eslint').Rule.RuleModule} */
const importRule = {
  meta: {
    type: 'problem',
    docs: { description: 'Imports follow the layering of the source tree (scripts/eslint-layers.mjs).' },
    schema: [],
    messages: {
      layer: '{{from}} may not import {{target}} ({{to}}): {{from}} imports only {{allowed}}. See scripts/eslint-layers.mjs.',
      node: "{{from}} may not import '{{target}}': it is browser-safe code (the dashboard page compiles it), so no Node.js module. Move what needs Node.js to src/engine outside common/.",
      vscode:
        "{{from}} may not import 'vscode': only the VS Code adapters (src/vscode, src/extension.ts) do; the CLI and the engine worker run without VS Code.",
    },
  },
  create(context) {
    const root = context.cwd;
    const file = relative(root, context.filename).split('\\').join('/');
    const from = layerOf(file);
    const vscodeAllowed = VSCODE_ALLOWED.some((p) => file === p || file.startsWith(`${p}/`));
    /** @param {import('estree').Node} node @param {unknown} source */
    const check = (node, source) => {
      if (typeof source !== 'string') return;
      if (source === 'vscode') {
        if (!vscodeAllowed) context.report({ node, messageId: 'vscode', data: { from: from ?? file } });
        return;
      }
      if (from && BROWSER_SAFE.includes(from) && NODE_MODULES.has(source)) {
        context.report({ node, messageId: 'node', data: { from, target: source } });
        return;
      }
      if (!from || !source.startsWith('.')) return;
      const target = relative(root, resolve(dirname(resolve(root, file)), source))
        .split('\\')
        .join('/');
      const to = layerOf(target) ?? layerOf(`${target}.ts`);
      if (!to) return;
      const allowed = LAYERS[/** @type {keyof typeof LAYERS} */ (from)];
      if (!allowed.includes(to))
        context.report({ node, messageId: 'layer', data: { from, target: source, to, allowed: allowed.join(', ') } });
    };
    return {
      ImportDeclaration: (node) => check(node, node.source.value),
      ExportNamedDeclaration: (node) => node.source && check(node, node.source.value),
      ExportAllDeclaration: (node) => check(node, node.source.value),
      ImportExpression: (node) => node.source.type === 'Literal' && check(node, node.source.value),
      CallExpression: (node) => {
        if (node.callee.type === 'Identifier' && node.callee.name === 'require' && node.arguments[0]?.type === 'Literal')
          check(node, node.arguments[0].value);
      },
    };
  },
};

export const layersPlugin = { rules: { imports: importRule } };
