// The gate config as committed at a commit, read through the API (no checkout needed).
import { ConfigError, type GateConfig, parseConfig } from "../config/gate-config";
import type { GitHub } from "./github/client";

/** `why` explains, when the file is missing, why this commit is the one read. */
export async function configAt(gh: GitHub, path: string, sha: string, why = ""): Promise<GateConfig> {
  const text = await gh.fileAt(path, sha);
  if (text === null) throw new ConfigError(`${path}: not found at ${sha.slice(0, 7)}${why}`);
  return parseConfig(text, path);
}
