// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const noVscode = {
  paths: [{ name: 'vscode', message: 'src/engine and the CLI never import vscode: the CLI and the engine worker run them without VS Code.' }],
};

export default tseslint.config(
  { ignores: ['dist/**', 'out/**', 'node_modules/**', 'tools/**', '.thetaevolve/**', 'test-output/**', '.demo/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
    },
  },
  {
    files: ['src/engine/**/*.ts', 'src/cli.ts', 'src/cli/**/*.ts', 'src/protocol/**/*.ts', 'webview/**/*.ts', 'bench/**/*.ts', 'test/unit/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', noVscode] },
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', Buffer: 'readonly' } },
  },
);
