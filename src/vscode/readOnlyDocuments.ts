// Read-only virtual documents served as a file system, not a text document
// content provider: VS Code restores a file system's editors (and diffs)
// after a window reload, activating the extension for the scheme
// (`onFileSystem:<scheme>` in package.json), while a content provider's tabs
// come back as errors. The documents never change once written (a program,
// an evaluation's output), so there are no change events.
import * as vscode from 'vscode';

/** The text of a document; never throws (a problem is said in the text). */
export type ReadDocument = (uri: vscode.Uri) => Promise<string>;

/**
 * Documents served as a file system of single files, no folders: what every
 * such provider shares (no change events, nothing to list, create, delete or
 * rename). Subclasses say how a file is statted, read and written.
 */
export abstract class DocumentFileSystem implements vscode.FileSystemProvider {
  private readonly changes = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  readonly onDidChangeFile = this.changes.event;

  abstract stat(uri: vscode.Uri): vscode.FileStat;
  abstract readFile(uri: vscode.Uri): Promise<Uint8Array>;
  abstract writeFile(uri: vscode.Uri, content: Uint8Array): void | Promise<void>;

  watch(): vscode.Disposable {
    return new vscode.Disposable(() => undefined);
  }

  readDirectory(): [string, vscode.FileType][] {
    return [];
  }

  createDirectory(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }

  delete(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }

  rename(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }

  dispose(): void {
    this.changes.dispose();
  }
}

class ReadOnlyFileSystem extends DocumentFileSystem {
  constructor(private readonly read: ReadDocument) {
    super();
  }

  // The size is not known before reading; VS Code reads the whole file anyway.
  stat(): vscode.FileStat {
    return { type: vscode.FileType.File, ctime: 0, mtime: 0, size: 0, permissions: vscode.FilePermission.Readonly };
  }

  async readFile(uri: vscode.Uri): Promise<Uint8Array> {
    return new TextEncoder().encode(await this.read(uri));
  }

  writeFile(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }
}

/** Serve `scheme:` documents read-only from `read`. */
export function registerReadOnlyDocuments(scheme: string, read: ReadDocument): vscode.Disposable {
  const provider = new ReadOnlyFileSystem(read);
  return vscode.Disposable.from(
    provider,
    vscode.workspace.registerFileSystemProvider(scheme, provider, { isCaseSensitive: true, isReadonly: true }),
  );
}
