// Every in-host suite, imported once the mocha globals exist.
import './activation.host';
import './editor.host';
import './run.host';
import './runFlows.host';
import './runTruth.host';
import './slurm.host';
import './steer.host';
import './compare.host';
import './notebook.host';
import './agentTools.host';
import './surface.host';
import './surfaceUntrusted.host';
import './python.host';
import './models.host';
