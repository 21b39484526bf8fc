#!/usr/bin/env node
// The compiled CLI (built by `npm run build`, which `npm ci` runs through `prepare`).
import '../dist/cli/bin.js';
