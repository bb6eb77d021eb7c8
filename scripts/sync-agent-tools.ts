// Writes package.json's contributes.languageModelTools (and the MCP server
// provider) from the agent tool table in src/engine/agentTools/definitions.ts
// (the single source of truth). Run: npx tsx scripts/sync-agent-tools.ts
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { contributedLanguageModelTools, contributedMcpServerDefinitionProviders } from '../src/engine/agentTools/definitions';

const file = join(__dirname, '..', 'package.json');
const manifest = JSON.parse(readFileSync(file, 'utf8'));
manifest.contributes.languageModelTools = contributedLanguageModelTools();
manifest.contributes.mcpServerDefinitionProviders = contributedMcpServerDefinitionProviders();
// VS Code 1.100 has the API under its proposed contribution name, and refuses a provider not listed there.
manifest.contributes.modelContextServerCollections = contributedMcpServerDefinitionProviders();
writeFileSync(file, JSON.stringify(manifest, null, 2) + '\n');
console.log(`package.json: ${manifest.contributes.languageModelTools.length} language-model tools written`);
