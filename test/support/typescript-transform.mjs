import ts from 'typescript';

/**
 * A Vite plugin that compiles the project's TypeScript with TypeScript itself, file by file
 * (`transpileModule`, safe under `isolatedModules`), so that legacy decorators and their design-type
 * metadata (which Nest's dependency injection reads) come out exactly as `tsc` builds the package.
 * Vite's default transform (esbuild) emits no decorator metadata; SWC would, but its native binaries
 * are not all resolvable from this project's registry, which breaks `npm ci`.
 */
export function typescriptTransform(tsconfigPath) {
  const { config } = ts.readConfigFile(tsconfigPath, ts.sys.readFile);
  const { options } = ts.convertCompilerOptionsFromJson(config.compilerOptions ?? {}, process.cwd());
  const compilerOptions = {
    ...options,
    module: ts.ModuleKind.ESNext,
    target: ts.ScriptTarget.ES2022,
    sourceMap: false,
    inlineSourceMap: true,
    inlineSources: true,
    declaration: false,
  };
  return {
    name: 'typescript-transform',
    enforce: 'pre',
    transform(code, id) {
      if (!/\.[cm]?ts$/.test(id) || id.endsWith('.d.ts') || id.includes('/node_modules/')) return null;
      const output = ts.transpileModule(code, { compilerOptions, fileName: id, reportDiagnostics: false });
      return { code: output.outputText, map: null };
    },
  };
}
