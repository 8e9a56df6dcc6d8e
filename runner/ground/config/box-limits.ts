/**
 * What a box may use: the limits a container is started with. The defaults
 * hold where neither org.toml nor worker.toml sets one; the config narrows
 * from them and the container spec falls back on them, so they live here,
 * under both.
 */
export interface BoxLimits {
  pids: number;
  memoryBytes: number;
  cpus: number;
}

export const DEFAULT_LIMITS: BoxLimits = {
  pids: 1024,
  memoryBytes: 4 * 1024 ** 3,
  cpus: 2,
};
