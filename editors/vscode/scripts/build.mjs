// Bundles src/extension.ts and its dependencies (vscode-languageclient) into
// dist/extension.js, after a type check. `--production` minifies and drops source maps.
import { execFileSync } from 'node:child_process';
import * as esbuild from 'esbuild';

const production = process.argv.includes('--production');
try {
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', '.', '--noEmit'], { stdio: 'inherit' });
} catch {
  process.exit(1); // tsc has printed the errors
}
await esbuild.build({
  entryPoints: ['src/extension.ts'],
  bundle: true,
  outfile: 'dist/extension.js',
  external: ['vscode'],
  format: 'cjs',
  platform: 'node',
  target: 'node18',
  minify: production,
  sourcemap: !production,
  logLevel: 'warning',
});
