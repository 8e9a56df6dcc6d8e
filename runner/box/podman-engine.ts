import type Docker from "dockerode";
import type { BoxSpec } from "./container-spec.ts";
import { DockerEngine } from "./docker-engine.ts";
import type { EngineKind } from "./engine.ts";

/**
 * Podman behind the seam, through the Docker-compatible API that `podman
 * system service` serves. Only what Podman reads differently is here.
 */
export class PodmanEngine extends DockerEngine {
  override readonly kind: EngineKind = "podman";

  protected override createOptions(spec: BoxSpec): Docker.ContainerCreateOptions {
    return super.createOptions(spec);
  }

  override async version(): Promise<string | undefined> {
    const version = await this.client.version().catch(() => undefined);
    return version ? `Podman ${version.Version}` : undefined;
  }
}
