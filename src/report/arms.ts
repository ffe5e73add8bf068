// What a report calls the two targets. In an A/A run both ports serve the champion, so the arms
// are the ports, never "champion" and "challenger" (docs/design/0014-who-runs-code.md). Pure.
import type { Analysis } from "../analysis/verdict";

export interface Arms {
  aa: boolean;
  /** The arm on the champion's port, and the other. */
  champion: string;
  challenger: string;
  /** What a paired difference is: "challenger − champion", or "port :8002 − port :8001". */
  difference: string;
}

export const CHAMPION_VS_CHALLENGER: Arms = {
  aa: false,
  champion: "champion",
  challenger: "challenger",
  difference: "challenger − champion",
};

export function armsOf(a: Pick<Analysis, "builds" | "targets">): Arms {
  if (a.builds?.kind !== "aa") return CHAMPION_VS_CHALLENGER;
  const champion = portName(a.targets?.champion, "the champion's port");
  const challenger = portName(a.targets?.challenger, "the challenger's port");
  return { aa: true, champion, challenger, difference: `${challenger} − ${champion}` };
}

function portName(target: string | undefined, otherwise: string): string {
  if (!target) return otherwise;
  try {
    const u = new URL(target);
    return `port :${u.port || (u.protocol === "https:" ? "443" : "80")}`;
  } catch {
    return otherwise;
  }
}
