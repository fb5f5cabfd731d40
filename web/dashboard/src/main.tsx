// Entry point of the dashboard's front end.
import { render } from 'preact';
import { App } from './app.js';
import 'uplot/dist/uPlot.min.css';
import './styles.css';

render(<App />, document.getElementById('app')!);
