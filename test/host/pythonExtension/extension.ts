// A stand-in for ms-python.python in the in-host tests: the active
// environment is whatever the test sets (none at first), and each resource
// it was asked about is kept, so the test sees that ThetaEvolve asks for
// the program's own. Built to out/test/pythonExtension by scripts/build.mjs.
import * as vscode from 'vscode';

export interface StandInPythonApi {
  environments: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { id: string; path: string };
    resolveEnvironment(
      environment: { path: string } | string,
    ): Promise<{ id: string; path: string; executable: { uri: vscode.Uri } } | undefined>;
  };
  /** Test hooks (the real extension has none; ThetaEvolve reads only `environments`). */
  standIn: { setActiveInterpreter(path: string | null): void; askedFor: string[] };
}

export function activate(): StandInPythonApi {
  let active: string | null = null;
  const askedFor: string[] = [];
  return {
    environments: {
      getActiveEnvironmentPath(resource) {
        askedFor.push(resource ? resource.toString() : 'no resource');
        return active ? { id: active, path: active } : { id: 'none', path: '' };
      },
      resolveEnvironment(environment) {
        const path = typeof environment === 'string' ? environment : environment.path;
        return Promise.resolve(path ? { id: path, path, executable: { uri: vscode.Uri.file(path) } } : undefined);
      },
    },
    standIn: {
      setActiveInterpreter(path) {
        active = path;
      },
      askedFor,
    },
  };
}

export function deactivate(): void {}
