import { existsSync, readFileSync, statSync } from "node:fs";
import { cp, mkdir, mkdtemp, readdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { RosterError } from "../../ground/errors.ts";
import { PROJECT_ROOT } from "../../ground/version.ts";

/**
 * The box image's build context, assembled in a temporary folder from exactly
 * the files the Dockerfile names, so the build never sees the host runner,
 * tests, node_modules or anything secret.
 */
export interface BuildContext {
  dir: string;
  /** Paths inside `dir`, for the tar stream. */
  files: string[];
  /** Top-level extension files baked, sorted: what run-pi will load. */
  extensions: string[];
}

export interface ContextSources {
  projectRoot?: string;
  /** Replaces the project's extensions/ folder (tests drop extra tools in here). */
  extensionsDir?: string;
  env?: NodeJS.ProcessEnv;
}

/** The files of the box folder the Dockerfile copies, besides the Dockerfile itself. */
export const BOX_TOOLS = ["roster-lock", "roster-busy", "roster-door", "roster-ready"] as const;
/** The files of engine/ the Dockerfile copies. */
export const ENGINE_FILES = [
  "package.json",
  "package-lock.json",
  "run-pi",
  "handoff.ts",
  "roster-mcp.ts",
  "run-roster-mcp",
  "run-claude",
  "run-codex",
] as const;

/**
 * The extensions folder a build bakes: the caller's, else ROSTER_EXTENSIONS_DIR
 * (a deployment, or a test, that keeps its tools elsewhere), else the project's.
 * A variable naming no folder is refused rather than quietly falling back.
 */
export function extensionsSource(sources: ContextSources = {}): string {
  if (sources.extensionsDir) return sources.extensionsDir;
  const named = (sources.env ?? process.env).ROSTER_EXTENSIONS_DIR;
  if (named) {
    if (!existsSync(named) || !statSync(named).isDirectory())
      throw new RosterError(
        `ROSTER_EXTENSIONS_DIR names ${named}, which is not a folder: point it at an extensions folder or unset it`,
        { exitCode: 2 },
      );
    return named;
  }
  return join(sources.projectRoot ?? PROJECT_ROOT, "extensions");
}

/** What the build copies from extensions/: everything but node_modules. */
export function extensionFilter(extensionsDir: string): (source: string) => boolean {
  return (source) => !relative(extensionsDir, source).split("/").includes("node_modules");
}

/** Top-level `*.ts` files of an extensions folder: exactly what run-pi passes with `-e`. */
export async function listExtensions(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .map((entry) => entry.name)
    .sort();
}

/**
 * The host's CA certificates, for the build stage that fetches npm packages
 * behind a TLS-intercepting proxy (corporate networks put the proxy's CA in the
 * host's store). ROSTER_BUILD_CA names a PEM file explicitly; then Node's and
 * OpenSSL's variables; then the system bundle. Empty when there is none.
 */
export const SYSTEM_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt";

export function hostExtraCa(env: NodeJS.ProcessEnv, systemBundle = SYSTEM_CA_BUNDLE): string {
  for (const candidate of [
    env.ROSTER_BUILD_CA,
    env.NODE_EXTRA_CA_CERTS,
    env.SSL_CERT_FILE,
    systemBundle,
  ]) {
    if (candidate && existsSync(candidate)) return readFileSync(candidate, "utf8");
  }
  return "";
}

export async function assembleContext(sources: ContextSources = {}): Promise<BuildContext> {
  const root = sources.projectRoot ?? PROJECT_ROOT;
  const extensionsDir = extensionsSource(sources);
  const dir = await mkdtemp(join(tmpdir(), "roster-build-"));

  await cp(join(root, "box/Dockerfile"), join(dir, "Dockerfile"));
  for (const tool of BOX_TOOLS) await cp(join(root, "box", tool), join(dir, tool));
  await mkdir(join(dir, "engine"));
  for (const name of ENGINE_FILES) {
    await cp(join(root, "engine", name), join(dir, "engine", name));
  }
  await cp(extensionsDir, join(dir, "extensions"), {
    recursive: true,
    filter: extensionFilter(extensionsDir),
  });
  await mkdir(join(dir, "build-ca"));
  await writeFile(join(dir, "build-ca/extra.crt"), hostExtraCa(sources.env ?? process.env));

  const files = await walk(dir);
  return { dir, files, extensions: await listExtensions(extensionsDir) };
}

async function walk(dir: string, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(join(dir, prefix), { withFileTypes: true })) {
    const path = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) out.push(...(await walk(dir, path)));
    else out.push(path);
  }
  return out.sort();
}
