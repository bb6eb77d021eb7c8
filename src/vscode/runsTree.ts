// The Runs view in the activity bar. Runs and their improving programs are
// listed once a run exists; until then the view shows its welcome content.
import * as vscode from 'vscode';

export type RunsTreeNode = { kind: 'run'; label: string };

export class RunsTreeProvider implements vscode.TreeDataProvider<RunsTreeNode> {
  private readonly changed = new vscode.EventEmitter<RunsTreeNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private runs: RunsTreeNode[] = [];

  getTreeItem(node: RunsTreeNode): vscode.TreeItem {
    return new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.Collapsed);
  }

  getChildren(node?: RunsTreeNode): RunsTreeNode[] {
    return node ? [] : this.runs;
  }

  dispose(): void {
    this.changed.dispose();
  }
}
