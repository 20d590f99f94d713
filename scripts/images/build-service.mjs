// Builds one Node service for its image: `node scripts/images/build-service.mjs deploy/<service>/build.json OUT`
// (without arguments, as `npm run build`: every deploy/*/build.json into dist/<service>).
// build.json names the entry files the image runs ("entries") and data the code reads that sits
// beside no module ("data": folders or files, node_modules paths included). Into OUT go:
//   - the entries and every module they import, compiled by tsc (tsconfig.build.json, type-checked);
//   - each compiled module's sibling data files (.lua, .yaml, .tmpl: read next to the module);
//   - node_modules holding only the packages the compiled code imports, with everything they
//     depend on (resolved through package-lock.json as Node resolves them), and of packages
//     with prebuilt binaries (onnxruntime-node) only this platform's;
//   - a package.json that makes the .js files ES modules.
// Plain JavaScript run by node: the image's build stage has typescript but not tsx. It runs in
// the image build (deploy/*/Containerfile) and as `npm run build` (every service into dist/).
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { basename, dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

const root = resolve(import.meta.dirname ?? dirname(new URL(import.meta.url).pathname), '../..');

/** Compiles `entries` and what they import into `out` (type-checked; any error stops the build). */
function compile(entries, out) {
  const config = ts.getParsedCommandLineOfConfigFile(
    join(root, 'tsconfig.build.json'),
    { outDir: out },
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => fail(ts.flattenDiagnosticMessageText(d.messageText, '\n')),
    },
  );
  const program = ts.createProgram(
    entries.map((e) => join(root, e)),
    config.options,
  );
  const result = program.emit();
  const diagnostics = [...ts.getPreEmitDiagnostics(program), ...result.diagnostics];
  if (diagnostics.length > 0) {
    const host = { getCanonicalFileName: (f) => f, getCurrentDirectory: () => root, getNewLine: () => '\n' };
    fail(`tsc found errors:\n${ts.formatDiagnostics(diagnostics, host)}`);
  }
}

/** Files beside each compiled module that are neither TypeScript nor documentation: what the module reads by relative path. */
function siblingData(sources) {
  const dirs = new Set(sources.map((s) => dirname(s)));
  return [...dirs].flatMap((dir) =>
    readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isFile() && !/\.(ts|md)$/.test(e.name))
      .map((e) => relative(root, join(dir, e.name))),
  );
}

/** A module's import specifiers (static, dynamic with a literal, require). */
function specifiers(file) {
  return ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles.map((f) => f.fileName);
}

/**
 * The compiled modules the entries load at run time, following relative imports (a module
 * imported only for its types compiles to an empty one that nothing loads), and the packages
 * they import, by name.
 */
function runtimeGraph(entries) {
  const modules = new Set();
  const packages = new Set();
  const visit = (file) => {
    if (modules.has(file)) return;
    modules.add(file);
    for (const spec of specifiers(file)) {
      if (spec.startsWith('.')) visit(resolve(dirname(file), spec));
      else if (!spec.startsWith('node:') && !isBuiltin(spec)) {
        const parts = spec.split('/');
        packages.add(spec.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]);
      }
    }
  };
  for (const entry of entries) visit(entry);
  return { modules, packages };
}

/** Where Node finds package `name` from the package at `from` ('' = the app): the nearest node_modules up the tree. */
function resolvePackage(installed, from, name) {
  let base = from;
  for (;;) {
    const candidate = `${base ? `${base}/` : ''}node_modules/${name}`;
    if (installed.has(candidate)) return candidate;
    if (!base) return undefined;
    const cut = base.lastIndexOf('/node_modules/');
    base = cut < 0 ? '' : base.slice(0, cut);
  }
}

/** The lockfile paths of `names` and of everything they depend on, installed here. */
function packageClosure(names) {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')).packages;
  const installed = new Set(Object.keys(lock).filter((p) => p && existsSync(join(root, p, 'package.json'))));
  const reached = new Set();
  const visit = (from, name, required) => {
    if (name.startsWith('@types/')) return; // declarations: never loaded at run time
    const path = resolvePackage(installed, from, name);
    if (!path) {
      if (required) fail(`${name} is imported${from ? ` by ${from}` : ''} but not installed (npm ci --omit=dev)`);
      return;
    }
    if (reached.has(path)) return;
    reached.add(path);
    const entry = lock[path];
    for (const dep of Object.keys(entry.dependencies ?? {})) visit(path, dep, true);
    for (const dep of Object.keys({ ...entry.optionalDependencies, ...entry.peerDependencies })) visit(path, dep, false);
  };
  for (const name of names) visit('', name, true);
  return [...reached].sort();
}

/** Copies a package without its nested node_modules (those are packages of their own) and other platforms' binaries. */
function copyPackage(path, out) {
  cpSync(join(root, path), join(out, path), {
    recursive: true,
    filter: (src) => !(basename(src) === 'node_modules' && src !== join(root, path)),
  });
  // onnxruntime-node's layout: bin/napi-vN/<platform>/<arch>/ (220 MB for darwin and win32 alone).
  const bin = join(out, path, 'bin');
  if (!existsSync(bin)) return;
  for (const napi of readdirSync(bin).filter((d) => /^napi-v\d+$/.test(d))) {
    for (const platform of readdirSync(join(bin, napi))) {
      const dir = join(bin, napi, platform);
      if (platform !== process.platform) rmSync(dir, { recursive: true });
      else for (const arch of readdirSync(dir)) if (arch !== process.arch) rmSync(join(dir, arch), { recursive: true });
    }
  }
}

function fail(message) {
  process.stderr.write(`build-service: ${message}\n`);
  process.exit(1);
}

/** Builds the service `manifest` describes into `out`; returns what went in. */
export function buildService(manifestPath, out) {
  const manifest = JSON.parse(readFileSync(resolve(root, manifestPath), 'utf8'));
  const work = `${out}.tsc`;
  rmSync(out, { recursive: true, force: true });
  rmSync(work, { recursive: true, force: true });
  compile(manifest.entries, work);
  const compiled = (source) => join(work, relative(root, source).replace(/\.ts$/, '.js'));
  const { modules, packages } = runtimeGraph(manifest.entries.map((e) => compiled(join(root, e))));
  for (const file of modules) cpSync(file, join(out, relative(work, file)));
  rmSync(work, { recursive: true });
  const sources = [...modules].map((file) => join(root, relative(work, file)));
  const data = [...siblingData(sources), ...(manifest.data ?? [])];
  for (const path of data) {
    if (!existsSync(join(root, path))) fail(`${manifestPath}: data ${path} does not exist`);
    cpSync(join(root, path), join(out, path), { recursive: true });
  }
  const installed = packageClosure(packages);
  for (const path of installed) copyPackage(path, out);
  writeFileSync(join(out, 'package.json'), `${JSON.stringify({ name: manifest.name, private: true, type: 'module' }, null, 2)}\n`);
  return { modules: modules.size, data, packages: installed };
}

/** Bytes under `dir`, for the summary line. */
function size(dir) {
  const stat = statSync(dir);
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(dir).reduce((sum, name) => sum + size(join(dir, name)), 0);
}

/** Builds one service and says what went in. */
function buildAndReport(manifest, out) {
  mkdirSync(out, { recursive: true });
  const built = buildService(manifest, resolve(out));
  const mb = (size(resolve(out)) / 1e6).toFixed(0);
  process.stderr.write(`build-service: ${manifest} -> ${out}: ${built.modules} modules, ${built.packages.length} packages, ${mb} MB\n`);
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(root, 'scripts/images/build-service.mjs')) {
  const [manifest, out] = process.argv.slice(2);
  if (manifest && out) buildAndReport(manifest, out);
  else if (manifest) fail('usage: node scripts/images/build-service.mjs [deploy/<service>/build.json OUT]');
  else {
    // `npm run build`: every service that has a build.json, into dist/<service>.
    for (const dir of readdirSync(join(root, 'deploy')).filter((d) => existsSync(join(root, 'deploy', d, 'build.json'))))
      buildAndReport(join('deploy', dir, 'build.json'), join(root, 'dist', dir));
  }
}
