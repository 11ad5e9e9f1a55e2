#!/usr/bin/env bash
# Creates a library in the shape every Troupe project has:
#   libs/<name>/{package.json, tsconfig.json, tsconfig.lib.json, vitest.config.ts, src/index.ts}
# package.json scripts become Nx targets (build, typecheck, lint, test), so `nx run-many` sees them.
# Usage: tools/new-lib.sh <name> "<description>" [apps]
set -euo pipefail
name=$1; desc=$2; kind=${3:-libs}
dir="$kind/$name"
[ -e "$dir" ] && { echo "$dir exists" >&2; exit 1; }
mkdir -p "$dir/src"
cat > "$dir/package.json" <<JSON
{
  "name": "@troupe/$name",
  "version": "0.1.0",
  "private": true,
  "description": "$desc",
  "type": "module",
  "exports": {
    ".": {
      "@troupe/source": "./src/index.ts",
      "types": "./dist/index.d.ts",
      "default": "./dist/index.js"
    }
  },
  "scripts": {
    "build": "tsc -p tsconfig.lib.json",
    "typecheck": "tsc -p tsconfig.json --noEmit",
    "lint": "biome check .",
    "test": "vitest run"
  },
  "nx": { "name": "$name", "tags": ["type:${kind%s}"] }
}
JSON
cat > "$dir/tsconfig.json" <<JSON
{
  "extends": "../../tsconfig.base.json",
  "compilerOptions": { "noEmit": true },
  "include": ["src/**/*.ts", "test/**/*.ts", "bench/**/*.ts", "*.ts"]
}
JSON
cat > "$dir/tsconfig.lib.json" <<JSON
{
  "extends": "../../tsconfig.base.json",
  "compilerOptions": { "rootDir": "src", "outDir": "dist", "noEmit": false },
  "include": ["src/**/*.ts"],
  "exclude": ["src/**/*.test.ts"]
}
JSON
cat > "$dir/vitest.config.ts" <<TS
import { sharedConfig } from "../../vitest.shared.ts";

export default sharedConfig;
TS
echo "export {};" > "$dir/src/index.ts"
echo "created $dir"
