from groupspec.cli import main

raise SystemExit(main())
