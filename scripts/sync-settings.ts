// Writes package.json's contributes.configuration from the settings table in
// src/engine/common/config.ts (the single source of truth), and the settings an
// untrusted workspace may not set (capabilities.untrustedWorkspaces). Run: npx tsx scripts/sync-settings.ts
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { contributedConfiguration, contributedSettings, restrictedConfigurations } from '../src/engine/common/config';

const file = join(__dirname, '..', 'package.json');
const manifest = JSON.parse(readFileSync(file, 'utf8'));
manifest.contributes.configuration = contributedConfiguration();
manifest.capabilities.untrustedWorkspaces.restrictedConfigurations = restrictedConfigurations();
writeFileSync(file, JSON.stringify(manifest, null, 2) + '\n');
console.log(
  `package.json: ${Object.keys(contributedSettings()).length} settings written in ${manifest.contributes.configuration.length} categories`,
);
