import type Docker from "dockerode";
import { processAlive } from "../files/process-alive.ts";
import { CONTAINER_LABELS } from "./layout.ts";

/**
 * Boxes whose runner is gone (killed, crashed, machine slept): found by their
 * labels at the next start and killed, so a box never outlives its governance.
 */
export interface Orphan {
  containerId: string;
  worker: string;
  runId: string;
}

export async function reapOrphans(docker: Docker): Promise<Orphan[]> {
  const containers = await docker.listContainers({
    all: true,
    filters: { label: [CONTAINER_LABELS.run] },
  });
  const reaped: Orphan[] = [];
  for (const info of containers) {
    const labels = info.Labels ?? {};
    const pid = Number(labels[CONTAINER_LABELS.runnerPid]);
    if (processAlive(pid)) continue;
    const container = docker.getContainer(info.Id);
    await container.remove({ force: true }).catch(() => undefined);
    reaped.push({
      containerId: info.Id,
      worker: labels[CONTAINER_LABELS.worker] ?? "",
      runId: labels[CONTAINER_LABELS.run] ?? "",
    });
  }
  return reaped;
}
