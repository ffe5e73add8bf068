// Container images of a static binary, written as `docker save` writes them (docker-archive)
// and as an OCI layout directory, with nothing but tar: no registry, no daemon.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { arch } from "node:os";
import { join } from "node:path";
import { scratchDir } from "./scratch";

const sha256 = (b: Buffer | string) => createHash("sha256").update(b).digest("hex");
const goArch = arch() === "x64" ? "amd64" : arch();

/** One layer holding /app/server (the binary) and /app/VERSION, as an uncompressed tar. */
function appLayer(binary: string, version: string): Buffer {
  const root = scratchDir("image");
  mkdirSync(join(root, "app"));
  copyFileSync(binary, join(root, "app/server"));
  writeFileSync(join(root, "app/VERSION"), `${version}\n`);
  execFileSync("chmod", ["0755", join(root, "app/server")]);
  return execFileSync("tar", ["-cf", "-", "--owner=0", "--group=0", "-C", root, "app"], { maxBuffer: 1 << 30 });
}

function imageConfig(layer: Buffer, entrypoint: string[]): string {
  return JSON.stringify({
    architecture: goArch,
    os: "linux",
    config: { Entrypoint: entrypoint, Env: ["PATH=/app"], WorkingDir: "/app" },
    rootfs: { type: "layers", diff_ids: [`sha256:${sha256(layer)}`] },
  });
}

/** `docker save` of a FROM scratch image holding the binary as /app/server, its entrypoint. */
export function dockerSave(binary: string, version: string, out: string): string {
  const dir = scratchDir("save");
  const layer = appLayer(binary, version);
  const config = imageConfig(layer, ["/app/server"]);
  const layerName = `${sha256(layer)}/layer.tar`;
  mkdirSync(join(dir, sha256(layer)));
  writeFileSync(join(dir, layerName), layer);
  writeFileSync(join(dir, `${sha256(config)}.json`), config);
  writeFileSync(
    join(dir, "manifest.json"),
    JSON.stringify([{ Config: `${sha256(config)}.json`, RepoTags: ["service:test"], Layers: [layerName] }]),
  );
  execFileSync("tar", ["-cf", out, "-C", dir, "manifest.json", `${sha256(config)}.json`, sha256(layer)]);
  return out;
}

/** The same image as an OCI layout directory (index.json, oci-layout, blobs/sha256/…). */
export function ociLayout(binary: string, version: string, dir: string): string {
  const blobs = join(dir, "blobs/sha256");
  mkdirSync(blobs, { recursive: true });
  const put = (b: Buffer | string) => {
    writeFileSync(join(blobs, sha256(b)), b);
    return { digest: `sha256:${sha256(b)}`, size: Buffer.byteLength(b) };
  };
  const layer = appLayer(binary, version);
  const manifest = JSON.stringify({
    schemaVersion: 2,
    mediaType: "application/vnd.oci.image.manifest.v1+json",
    config: { mediaType: "application/vnd.oci.image.config.v1+json", ...put(imageConfig(layer, ["/app/server"])) },
    layers: [{ mediaType: "application/vnd.oci.image.layer.v1.tar", ...put(layer) }],
  });
  writeFileSync(join(dir, "oci-layout"), JSON.stringify({ imageLayoutVersion: "1.0.0" }));
  writeFileSync(
    join(dir, "index.json"),
    JSON.stringify({
      schemaVersion: 2,
      manifests: [
        {
          mediaType: "application/vnd.oci.image.manifest.v1+json",
          ...put(manifest),
          platform: { os: "linux", architecture: goArch },
        },
      ],
    }),
  );
  return dir;
}
