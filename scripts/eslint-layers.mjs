// @ts-check
// The layering of the source tree, enforced on every import (the way Copilot
// Chat's lint zones keep `common/` free of `vscode`). Each layer lists what
// it may import; `vscode` itself only the VS Code adapters may import.
//
//   src/engine     the engine: imports nothing above it
//   src/protocol   message schemas: the engine's types only
//   src/worker     the worker thread and its host-side client: engine + protocol
//   src/dashboard  the dashboard's model and feed (host side, no vscode): engine + protocol
//   src/cli        the command line: engine
//   webview/src    the dashboard page: protocol
//   src/vscode     the VS Code adapters: all of the above but the CLI
import { dirname, relative, resolve } from 'node:path';

/** Layer name -> the layers it may import from (itself included). */
export const LAYERS = {
  'src/engine': ['src/engine'],
  'src/protocol': ['src/protocol', 'src/engine'],
  'src/worker': ['src/worker', 'src/protocol', 'src/engine'],
  'src/dashboard': ['src/dashboard', 'src/protocol', 'src/engine'],
  'src/cli': ['src/cli', 'src/engine'],
  'webview/src': ['webview/src', 'src/protocol'],
  'src/vscode': ['src/vscode', 'src/dashboard', 'src/worker', 'src/protocol', 'src/engine'],
};
/** Files that belong to a layer without living in its folder. */
const FILE_LAYERS = { 'src/cli.ts': 'src/cli', 'src/extension.ts': 'src/vscode' };
/** Where `import 'vscode'` is allowed. */
const VSCODE_ALLOWED = ['src/vscode', 'src/extension.ts', 'test/host'];

/** @param {string} path repository-relative, forward slashes */
function layerOf(path) {
  if (path in FILE_LAYERS) return FILE_LAYERS[/** @type {keyof typeof FILE_LAYERS} */ (path)];
  return Object.keys(LAYERS).find((layer) => path === layer || path.startsWith(`${layer}/`)) ?? null;
}

/** @type {import('eslint').Rule.RuleModule} */
const importRule = {
  meta: {
    type: 'problem',
    docs: { description: 'Imports follow the layering of the source tree (scripts/eslint-layers.mjs).' },
    schema: [],
    messages: {
      layer: "{{from}} may not import {{target}} ({{to}}): {{from}} imports only {{allowed}}. See scripts/eslint-layers.mjs.",
      vscode: "{{from}} may not import 'vscode': only the VS Code adapters (src/vscode, src/extension.ts) do; the CLI and the engine worker run without VS Code.",
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
      if (!from || !source.startsWith('.')) return;
      const target = relative(root, resolve(dirname(resolve(root, file)), source)).split('\\').join('/');
      const to = layerOf(target) ?? layerOf(`${target}.ts`);
      if (!to) return;
      const allowed = LAYERS[/** @type {keyof typeof LAYERS} */ (from)];
      if (!allowed.includes(to)) context.report({ node, messageId: 'layer', data: { from, target: source, to, allowed: allowed.join(', ') } });
    };
    return {
      ImportDeclaration: (node) => check(node, node.source.value),
      ExportNamedDeclaration: (node) => node.source && check(node, node.source.value),
      ExportAllDeclaration: (node) => check(node, node.source.value),
      ImportExpression: (node) => node.source.type === 'Literal' && check(node, node.source.value),
      CallExpression: (node) => {
        if (node.callee.type === 'Identifier' && node.callee.name === 'require' && node.arguments[0]?.type === 'Literal') check(node, node.arguments[0].value);
      },
    };
  },
};

export const layersPlugin = { rules: { imports: importRule } };
