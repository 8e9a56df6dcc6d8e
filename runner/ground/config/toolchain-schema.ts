import { type Static, Type } from "@sinclair/typebox";

/**
 * `[toolchain]` in org.toml (every worker's default) or worker.toml (its own):
 * packages baked into a worker's derived box image. Each entry is a package
 * name, pinned or not, in its ecosystem's own spelling. The patterns admit no
 * space and no shell character, so an entry can't be anything but a package.
 */
const entries = (pattern: string, example: string) =>
  Type.Optional(Type.Array(Type.String({ pattern, description: example }), { maxItems: 200 }));

export const ToolchainSection = Type.Object(
  {
    /** Debian packages: `name` or `name=version`. */
    apt: entries(
      "^[a-z0-9][a-z0-9+.-]+(=[A-Za-z0-9.+~:-]+)?$",
      'a Debian package, like "jq" or "jq=1.6-2.1"',
    ),
    /** Global npm packages: `name`, `@scope/name`, either with `@version`. */
    npm: entries(
      "^(@[a-z0-9][a-z0-9._-]*/)?[a-z0-9][a-z0-9._-]*(@[A-Za-z0-9.^~<>=*+-]+)?$",
      'an npm package, like "typescript" or "typescript@5.9.3"',
    ),
    /** Python packages: `name`, `name[extra]`, either with `==version` (or >=, <=, ~=, !=). */
    pip: entries(
      "^[A-Za-z0-9][A-Za-z0-9._-]*(\\[[A-Za-z0-9,._-]+\\])?((==|>=|<=|~=|!=)[A-Za-z0-9.*+!-]+)?$",
      'a Python package, like "requests" or "requests==2.32.3"',
    ),
    /** A host folder of .whl files pip may install from, besides its index (private wheels). */
    pip_wheels: Type.Optional(Type.String({ pattern: "^/", description: "an absolute path" })),
  },
  { additionalProperties: false },
);
export type ToolchainSection = Static<typeof ToolchainSection>;

/** What a project's .roster/toolchain.toml may say: packages only, never a host path. */
export const ProjectToolchainSection = Type.Omit(ToolchainSection, ["pip_wheels"], {
  additionalProperties: false,
});

export interface Toolchain {
  apt: string[];
  npm: string[];
  pip: string[];
  /** The host folder of wheels pip may use (the worker's, else the org's). */
  pipWheels?: string;
}

/** The worker's own list for each ecosystem it declares, else the org's. */
export function workerToolchain(
  org: ToolchainSection | undefined,
  worker: ToolchainSection | undefined,
): Toolchain {
  const pipWheels = worker?.pip_wheels ?? org?.pip_wheels;
  return {
    apt: worker?.apt ?? org?.apt ?? [],
    npm: worker?.npm ?? org?.npm ?? [],
    pip: worker?.pip ?? org?.pip ?? [],
    ...(pipWheels ? { pipWheels } : {}),
  };
}

export const toolchainIsEmpty = (toolchain: Toolchain) =>
  !toolchain.apt.length && !toolchain.npm.length && !toolchain.pip.length;
