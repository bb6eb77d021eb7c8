// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { layersPlugin } from './scripts/eslint-layers.mjs';

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
    // Which layer may import which, and `vscode` only in the VS Code adapters (scripts/eslint-layers.mjs).
    files: ['**/*.ts'],
    plugins: { layers: layersPlugin },
    rules: { 'layers/imports': 'error' },
  },
  {
    // VS Code renders `[label](command:ID)` in a message as a link that runs the command: every text shown in its UI
    // goes through src/vscode/notify.ts (forMessage), the one file that calls these (docs/guide.md "What the editor trusts").
    files: ['src/**/*.ts'],
    ignores: ['src/vscode/notify.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector:
            'MemberExpression[property.name=/^(showInformationMessage|showWarningMessage|showErrorMessage|withProgress|showQuickPick|createQuickPick|showInputBox|createInputBox|setStatusBarMessage)$/]',
          message:
            'Show text through src/vscode/notify.ts (showInfo, showWarning, showError, withProgress, pickOne, pickMany, askText): it passes it through forMessage.',
        },
      ],
    },
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        Buffer: 'readonly',
      },
    },
  },
);
