// Lint rules: eslint's and typescript-eslint's recommended sets, no `any` anywhere.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        Buffer: 'readonly',
        console: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        fetch: 'readonly',
        URL: 'readonly',
        URLSearchParams: 'readonly',
        TextDecoder: 'readonly',
        AbortController: 'readonly',
        Headers: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
    },
  },
  {
    // The request path: on Node 20 (V8 11.3) a property added to an object made by a spread
    // ({ ...a, b }, or a later o.b = …) gives it a new hidden class on every evaluation, which
    // keeps the request alive through young collections (docs/decisions.md, 264). Put new
    // properties before the spread, or use Object.assign when they must override.
    files: [
      'src/inference/**/*.ts',
      'src/billing/**/*.ts',
      'src/protocols/**/*.ts',
      'src/providers/**/*.ts',
      'src/http/**/*.ts',
      'src/redis/**/*.ts',
      'src/auth/**/*.ts',
      'src/cache/**/*.ts',
      'src/tokens/**/*.ts',
      'src/routes/framework/**/*.ts',
      'src/routes/chat-completions.ts',
      'src/routes/messages.ts',
    ],
    // A command run by an operator, not the request path.
    ignores: ['**/*.test.ts', 'src/billing/reconcile.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'ObjectExpression > SpreadElement ~ Property',
          message:
            'A property after a spread costs a new hidden class per call on Node 20: put it before the spread, or use Object.assign to override (docs/decisions.md, 264).',
        },
      ],
    },
  },
);
